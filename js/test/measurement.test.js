// "Measure at N" belongs to the report it was measured against (actions.js reportArrived): the
// `measurement` trait keeps the kernel's latest result across a Re-profile, and the kernel may
// clear it or send it again, so a new report never shows the old report's measurement.
import { afterEach, describe, expect, test } from "vitest";
import widget from "../src/index.js";
import { formatBytes, formatThroughput } from "../src/format.js";
import { Predictor } from "../src/predict.js";
import { loadReport, mount } from "./helpers.js";

let views = [];
afterEach(() => {
  for (const v of views) v.unmount();
  views = [];
});

const MiB = 2 ** 20;
const at40 = { batch_size: 40, iteration_ms: 66.67, peak_bytes: 38.2 * MiB, throughput: 600 };
const shown = (view) => view.q("measurement").textContent;

/** The profile the user re-profiled at batch 8: another report in the same widget. */
function reprofiled() {
  const report = loadReport("small");
  report.batch_size = 8;
  report.iteration_ms = 0.76;
  report.throughput = 10_526;
  return report;
}

/** Another view of `model`, as JupyterLab opens for "Create New View for Output". */
function secondView(model) {
  const el = document.body.appendChild(document.createElement("div"));
  const cleanup = widget.render({ model, el });
  const view = { el, q: (name) => el.querySelector(`[data-skyline="${name}"]`), unmount: () => { cleanup(); el.remove(); } };
  views.push(view);
  return view;
}

describe("a measurement and the report it was taken against", () => {
  test("Re-profile drops the old report's measurement; one measured since shows", () => {
    const view = mount({ report: loadReport("small") });
    views.push(view);
    view.model.set("measurement", at40);
    expect(shown(view)).toMatch(/^Measured at 40: 600 samples\/s, peak 38\.2 MiB/);

    view.model.set("report", reprofiled());
    expect(view.q("header").textContent).toContain("Batch size: 8");
    expect(shown(view)).toBe("");

    // The kernel sends the same result again (a new object, equal values): still the old one's.
    view.model.set("measurement", { ...at40 });
    expect(shown(view)).toBe("");
    view.model.set("measurement", {});
    expect(shown(view)).toBe("");

    // Measured against the new report: shown, against its prediction.
    view.model.set("measurement", { ...at40, throughput: 650, iteration_ms: 61.5 });
    expect(shown(view)).toMatch(/^Measured at 40: 650 samples\/s, peak 38\.2 MiB/);
    expect(shown(view)).toContain("predicted");
  });

  test("a view opened after the Re-profile does not show the old measurement either", () => {
    const view = mount({ report: loadReport("small"), measurement: at40 });
    views.push(view);
    // Opened with both (a saved notebook): nothing tells them apart, so it is this report's.
    expect(shown(view)).toMatch(/^Measured at 40: 600 samples\/s/);
    view.model.set("report", reprofiled());
    expect(shown(view)).toBe("");
    const other = secondView(view.model);
    expect(other.q("header").textContent).toContain("Batch size: 8");
    expect(shown(other)).toBe("");
  });
});

test("a measurement says how far apart its steps lay, or that the machine was busy", () => {
  const view = mount({ report: loadReport("small"), measurement: { ...at40, steps: 12, spread: 0.081, waited: false } });
  views.push(view);
  const lines = () => [...view.q("measurement").children].map((e) => e.textContent);
  expect(lines()).toHaveLength(3);
  expect(lines()[2]).toBe("the middle half of its 12 timed steps lay within 8.1% of each other");
  view.model.set("measurement", { ...at40, steps: 20, spread: 0.9, waited: true });
  expect(lines()[2]).toBe("the machine was busy: most steps waited for a CPU (other programs' work, this "
    + "notebook's server and browser included), so on a quieter machine this step may run faster");
  view.model.set("measurement", { ...at40, iteration_ms: 70 }); // from before the kernel sent either
  expect(lines()).toHaveLength(2);
});

test("a measurement faster than the curve's ceiling says so", () => {
  const report = loadReport("small");
  const view = mount({ report });
  views.push(view);
  const ceiling = new Predictor(report.models).asymptoticThroughput;
  view.model.set("measurement", { ...at40, throughput: 1.2 * ceiling, iteration_ms: 40_000 / (1.2 * ceiling) });
  expect(shown(view)).toContain(`faster than the curve's ceiling (${formatThroughput(ceiling)} at any batch size)`);
  view.model.set("measurement", { ...at40, throughput: 0.5 * ceiling, iteration_ms: 40_000 / (0.5 * ceiling) });
  expect(shown(view)).not.toContain("ceiling");
  // joined: the curve the kernel sent takes it in (or it lay within the curve's noise)
  view.model.set("measurement", { ...at40, throughput: 1.2 * ceiling, iteration_ms: 40_000 / (1.2 * ceiling), joined: true });
  expect(shown(view)).toContain("added to the samples");
  expect(shown(view)).not.toContain("ceiling");
});

describe("a measurement that joins the samples", () => {
  /** The report the kernel sends when the measurement at 40 joined it: one more sample. */
  function joined(report) {
    const next = structuredClone(report);
    next.samples = [...next.samples, { batch_size: 40, iteration_ms: 66.67, peak_bytes: 38.2 * MiB }];
    return next;
  }

  test("the view stays at the size dragged to, and compares with what was predicted before", () => {
    const report = loadReport("small");
    const view = mount({ report });
    views.push(view);
    view.model.set("selected_batch_size", 40); // the drag ended there
    expect(view.q("predicted-batch-size").textContent).toBe("40");
    const before = new Predictor(report.models).predictIterationMs(40);
    // The kernel sends the joined report first, then the measurement (live.py).
    expect(view.el.querySelector(".sk-batch-tag").textContent).toBe(" (predicted)");
    view.model.set("report", joined(report));
    expect(view.q("predicted-batch-size").textContent).toBe("40");
    // the bars show the curve there, the tag what was measured
    expect(view.el.querySelector(".sk-batch-tag").textContent).toBe(
      ` (predicted; measured here: ${formatThroughput(40_000 / 66.67)}, ${formatBytes(38.2 * MiB)})`);
    view.model.set("measurement", { ...at40, predicted_ms: 2 * before, predicted_peak_bytes: 40 * MiB, joined: true, not_joined: null });
    const predicted = formatThroughput(40_000 / (2 * before));
    expect(shown(view)).toContain(`predicted ${predicted} (`);
    expect(shown(view)).toContain("added to the samples: the time curve now goes through 40 too");
  });

  /** The small report's view after the kernel sent `measurement` (joined or not). */
  function measuredView(measurement) {
    const view = mount({ report: loadReport("small") });
    views.push(view);
    view.model.set("measurement", { ...at40, joined: false, not_joined: null, ...measurement });
    return view;
  }

  test("one measured on a busy machine joins, and a quieter one replaces it", () => {
    const view = measuredView({ waited: true, joined: true });
    expect(shown(view)).toContain("so on a quieter machine this step may run faster");
    expect(shown(view)).toContain("goes through 40 too (Measure again when the machine is quieter: it replaces this one)");
  });

  test("one within the curve's tolerance says the curve stays", () => {
    const view = measuredView({ joined: true, curve_kept: true });
    expect(shown(view)).toContain("added to the samples: within the curve's tolerance: the curve stays as it was");
  });

  test("one of another model is put beside no prediction", () => {
    const why = "the model measured is not this profile's: its parameters hold 66.8 KiB in 4 tensors, the profile's 1.52 MiB in 6.";
    const view = measuredView({ other_model: true, not_joined: why });
    expect(shown(view)).toContain(`not added to the samples: ${why}`);
    expect(shown(view)).not.toContain("predicted");
    expect(shown(view)).not.toContain("ceiling");
  });

  test("one that did not join says why", () => {
    const why = "no curve goes within 6% of it and as near the profile's samples as the profile's own curve";
    const view = measuredView({ not_joined: why });
    expect(shown(view)).toContain(`not added to the samples: ${why}`);
    view.model.set("measurement", { ...at40, iteration_ms: 66.0, joined: false, not_joined: null }); // at its own batch
    expect(shown(view)).not.toContain("samples:");
  });
});
