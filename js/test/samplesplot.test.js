import { afterEach, describe, expect, test } from "vitest";
import { Predictor } from "../src/predict.js";
import { NO_CURVE, batchTicks, createSamplesPlot, curveBatches, usableSamples, valueTicks } from "../src/samplesplot.js";
import { loadReport, mount, pointer, setRect } from "./helpers.js";

let view;
afterEach(() => {
  view?.unmount();
  view = null;
});

// The small report (tests/fixtures/make_reports.py): samples at 32, 64, 128 and 256, the user's
// at 32; the fitted lines are good for a drag up to 2,048.
const small = () => loadReport("small");
const plotOf = (report, predictor = new Predictor(report.models)) => createSamplesPlot({ report, predictor });
const panel = (plot, metric) => plot.el.querySelector(`.sk-samples-panel[data-metric="${metric}"]`);
const points = (el) => [...el.querySelectorAll('[data-skyline="samples-point"]')];
const markerX = (el) => Number(el.querySelector(".sk-samples-marker-line").getAttribute("x1"));
const pathXs = (path) => [...path.getAttribute("d").matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => Number(m[1]));
const cx = (el, batch) => Number(el.querySelector(`[data-skyline="samples-point"][data-batch="${batch}"]`).getAttribute("cx"));

/** Every attribute of every element under el that reads NaN or Infinity. */
function badAttributes(el) {
  return [el, ...el.querySelectorAll("*")].flatMap((e) => [...e.attributes]
    .filter((a) => /NaN|Infinity|undefined/.test(a.value)).map((a) => `${e.tagName}.${a.name}=${a.value}`));
}

/** A stand-in for the Predictor: time 1 ms + 0.01 ms a sample, memory 1 MiB + 4 KiB a sample. */
function stub(fields = {}) {
  return {
    canManipulate: true, reason: null, measuredRange: [16, 128],
    predictIterationMs: (b) => 1 + 0.01 * b,
    predictPeakBytes: (b) => 2 ** 20 + 4096 * b,
    maxBatchSize: () => 1024,
    ...fields,
  };
}
const stubReport = (samples = [16, 32, 64, 128]) => ({
  batch_size: 32, iteration_ms: 1.32, peak_bytes: 2 ** 20 + 4096 * 32,
  samples: samples.map((b) => ({ batch_size: b, iteration_ms: 1 + 0.01 * b, peak_bytes: 2 ** 20 + 4096 * b })),
});

describe("the samples plot", () => {
  test("one point per sample in each panel, the user's batch drawn distinct", () => {
    const plot = plotOf(small());
    for (const metric of ["time", "memory"]) {
      const ps = points(panel(plot, metric));
      expect(ps.map((p) => Number(p.dataset.batch))).toEqual([32, 64, 128, 256]);
      expect(ps.filter((p) => p.dataset.user === "true").map((p) => p.dataset.batch)).toEqual(["32"]);
      expect(ps[0].classList.contains("sk-samples-user")).toBe(true);
      // Larger batches lie further right and (time and memory grow) higher up.
      const xs = ps.map((p) => Number(p.getAttribute("cx")));
      const ys = ps.map((p) => Number(p.getAttribute("cy")));
      expect(xs).toEqual([...xs].sort((a, b) => a - b));
      expect(ys).toEqual([...ys].sort((a, b) => b - a));
    }
    expect(panel(plot, "time").querySelector("title").textContent).toBe("batch 32 (yours): 1.84 ms measured");
    // the asymptote 1000 / the steepest slope: what only an infinite batch reaches
    expect(plot.el.querySelector('[data-skyline="samples-note"]').textContent)
      .toMatch(/^measured at batch 32\u2013256 \u00b7 asymptote [\d,.]+ samples\/s$/);
    expect(badAttributes(plot.el)).toEqual([]);
  });

  test("the curve is solid over the measured range and dashed only beyond it", () => {
    const plot = plotOf(small());
    for (const metric of ["time", "memory"]) {
      const el = panel(plot, metric);
      const [lo, hi] = [cx(el, 32), cx(el, 256)];
      const solid = [...el.querySelectorAll('.sk-samples-curve[data-part="measured"]')];
      const dashed = [...el.querySelectorAll('.sk-samples-curve[data-part="extrapolated"]')];
      expect(solid).toHaveLength(1);
      expect(dashed).toHaveLength(2); // below 32 and above 256
      expect(solid[0].classList.contains("sk-samples-extrapolated")).toBe(false);
      const xs = pathXs(solid[0]);
      expect(Math.min(...xs)).toBeCloseTo(lo, 1);
      expect(Math.max(...xs)).toBeCloseTo(hi, 1);
      for (const path of dashed) {
        expect(path.classList.contains("sk-samples-extrapolated")).toBe(true);
        const d = pathXs(path);
        expect(Math.max(...d) <= lo + 0.01 || Math.min(...d) >= hi - 0.01).toBe(true);
      }
    }
    const text = plot.el.textContent;
    expect(text).toContain("measured");
    expect(text).toContain("extrapolated");
  });

  test("the curve runs over the whole drag range, minBatchSize() … maxBatchSize()", () => {
    const batches = curveBatches(1, 2048, [32, 256, 100]);
    expect(batches[0]).toBe(1);
    expect(batches.at(-1)).toBe(2048);
    expect(batches).toEqual(expect.arrayContaining([32, 256, 100]));
    expect(batches.length).toBeGreaterThanOrEqual(60);
    expect(batches).toEqual([...batches].sort((a, b) => a - b));
  });

  test("above a size the code refused, the curve starts where the drag does", () => {
    const batches = curveBatches(9, 256, [4, 32, 256]);
    expect(batches[0]).toBe(9);
    expect(batches.at(-1)).toBe(256);
    expect(batches).not.toContain(4);
    expect(batches).toEqual([...batches].sort((a, b) => a - b));
  });

  test("setBatch moves the marker, and its ring sits on the curve", () => {
    const plot = plotOf(small());
    const el = panel(plot, "time");
    const ring = el.querySelector(".sk-samples-ring");
    expect(markerX(el)).toBeCloseTo(cx(el, 32), 1);
    expect(ring.getAttribute("cy")).toBe(points(el)[0].getAttribute("cy"));
    plot.setBatch(256);
    expect(markerX(el)).toBeCloseTo(cx(el, 256), 1);
    plot.setBatch(1024);
    expect(markerX(el)).toBeGreaterThan(cx(el, 256));
    expect(ring.getAttribute("visibility")).toBe(null);
    expect(el.querySelector('[data-skyline="samples-marker"]').dataset.batch).toBe("1024");
    expect(badAttributes(plot.el)).toEqual([]);
  });

  test("dragging the bars moves the marker in the widget; a commit keeps it there", () => {
    view = mount({ report: small() });
    const plot = view.q("samples-plot");
    expect(plot.closest('[data-skyline="bars"]')).not.toBe(null);
    const time = plot.querySelector('.sk-samples-panel[data-metric="time"]');
    const start = markerX(time);
    const bar = view.q("throughput-bar");
    setRect(bar, { top: 100, height: 200 });
    pointer(bar, "pointerdown", { clientY: 200 });
    pointer(bar, "pointermove", { clientY: 120 });
    const batch = Number(view.q("predicted-batch-size").textContent);
    expect(batch).toBeGreaterThan(32);
    expect(time.querySelector('[data-skyline="samples-marker"]').dataset.batch).toBe(String(batch));
    expect(markerX(time)).toBeGreaterThan(start);
    pointer(bar, "pointerup", { clientY: 120 });
    expect(time.querySelector('[data-skyline="samples-marker"]').dataset.batch).toBe(String(batch));
  });

  test("a widget opened at a chosen batch size puts the marker there", () => {
    view = mount({ report: small(), selected_batch_size: 128 });
    expect(view.q("samples-marker").dataset.batch).toBe("128");
  });

  test("nothing to draw: no samples, one batch size, none usable", () => {
    for (const samples of [undefined, [], [{ batch_size: 32, iteration_ms: 1, peak_bytes: 1 }],
      [{ batch_size: 32, iteration_ms: 1 }, { batch_size: 32, iteration_ms: 2 }],
      [{ batch_size: "x" }, { batch_size: -4 }, { batch_size: 0 }, null]]) {
      const report = small();
      report.samples = samples;
      expect(plotOf(report)).toBe(null);
    }
    const report = small();
    delete report.samples;
    view = mount({ report });
    expect(view.q("samples-plot")).toBe(null);
    expect(view.q("throughput-bar")).not.toBe(null);
  });

  test("without a model to drag: the points, no curve, and the reason as text", () => {
    const report = small();
    const reason = "<img src=x onerror=alert(1)> too few samples";
    report.models.can_manipulate = false;
    report.models.reason = reason;
    const plot = plotOf(report);
    expect(points(plot.el)).toHaveLength(8);
    expect(plot.el.querySelectorAll(".sk-samples-curve")).toHaveLength(0);
    expect(plot.el.querySelector('[data-skyline="samples-reason"]').textContent).toBe(NO_CURVE);
    expect(plot.el.textContent).not.toContain("too few samples"); // the bars say why, once
    expect(plot.el.querySelector("img")).toBe(null);
    expect(plot.el.textContent).not.toContain("extrapolated");
    plot.setBatch(64); // a marker, but no prediction to ring
    expect(badAttributes(plot.el)).toEqual([]);
    // No models at all: the same, with the predictor's words.
    delete report.models;
    const bare = plotOf(report);
    expect(bare.el.querySelector('[data-skyline="samples-reason"]').textContent).toBe(NO_CURVE);
  });

  test("odd sample values are skipped, text stays text, no NaN in any attribute", () => {
    const report = small();
    report.batch_size = "<b>32</b>";
    report.samples.push(
      { batch_size: "<script>alert(1)</script>", iteration_ms: 5, peak_bytes: 5 },
      { batch_size: 512, iteration_ms: Number.NaN, peak_bytes: null },
      { batch_size: 1024, iteration_ms: -1, peak_bytes: "lots" },
      { batch_size: 2048, iteration_ms: Infinity, peak_bytes: 1e7 },
      { batch_size: null },
      "not a sample",
    );
    const plot = plotOf(report);
    expect(points(panel(plot, "time")).map((p) => p.dataset.batch)).toEqual(["32", "64", "128", "256"]);
    expect(points(panel(plot, "memory")).map((p) => p.dataset.batch)).toEqual(["32", "64", "128", "256", "2048"]);
    expect(plot.el.querySelector("script, b")).toBe(null);
    expect(plot.el.querySelectorAll(".sk-samples-user")).toHaveLength(0);
    plot.setBatch("nonsense");
    plot.setBatch(Number.NaN);
    plot.setBatch(300);
    expect(badAttributes(plot.el)).toEqual([]);
    expect(usableSamples([{ batch_size: "64", iteration_ms: "2", peak_bytes: 0 }])).toEqual([{ batch: 64, time: 2, memory: null, phase: null }]);
  });

  test("a model that predicts nothing positive draws no curve there, and no NaN", () => {
    const plot = createSamplesPlot({ report: stubReport(), predictor: stub({ predictIterationMs: (b) => b - 100, predictPeakBytes: () => Number.NaN }) });
    const time = panel(plot, "time");
    for (const path of time.querySelectorAll(".sk-samples-curve")) expect(Math.min(...pathXs(path))).toBeGreaterThan(cx(time, 64));
    expect(panel(plot, "memory").querySelectorAll(".sk-samples-curve")).toHaveLength(0);
    plot.setBatch(8);
    expect(badAttributes(plot.el)).toEqual([]);
  });

  test("the optional bend and flat-time fields: drawn when present, absent when not", () => {
    const plain = createSamplesPlot({ report: stubReport(), predictor: stub() });
    expect(plain.el.querySelector('[data-skyline="samples-bend"]')).toBe(null);
    expect(plain.el.textContent).not.toMatch(/launch-bound|time flat/);
    const plot = createSamplesPlot({ report: stubReport(), predictor: stub({ bendBatchSize: 100, launchBoundUpTo: 64 }) });
    const bend = plot.el.querySelectorAll('[data-skyline="samples-bend"]');
    expect(bend).toHaveLength(1); // the time panel's only
    expect(bend[0].closest(".sk-samples-panel").dataset.metric).toBe("time");
    expect(bend[0].textContent).toBe("bend 100");
    // painted after the batch marker, so the marker's line never runs through the label's text
    // ("bend 138" with the line at 16 over it read "bend 1,138" in a screenshot)
    const marker = bend[0].closest(".sk-samples-panel").querySelector('[data-skyline="samples-marker"]');
    expect(marker.compareDocumentPosition(bend[0]) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    // a CPU launches nothing: its flat time is said as such; a GPU's is launch-bound
    expect(plot.el.querySelector('[data-skyline="samples-note"]').textContent).toBe("measured at batch 16\u2013128 \u00b7 time flat up to at least 64");
    const gpu = createSamplesPlot({ report: { ...stubReport(), device: { kind: "cuda" } }, predictor: stub({ launchBoundUpTo: 64 }) });
    expect(gpu.el.querySelector('[data-skyline="samples-note"]').textContent).toBe("measured at batch 16\u2013128 \u00b7 launch-bound up to at least 64");
    const none = createSamplesPlot({ report: stubReport(), predictor: stub({ bendBatchSize: null, launchBoundUpTo: null }) });
    expect(none.el.querySelector('[data-skyline="samples-bend"]')).toBe(null);
    expect(none.el.textContent).not.toMatch(/launch-bound|time flat/);
    expect(badAttributes(plot.el)).toEqual([]);
  });
});

/** A batch axis as a panel draws it: log2 of [lo, hi] onto x 52 … 240 of a 250 px panel. */
const axis = (lo, hi) => (b) => 52 + ((Math.log2(b) - Math.log2(lo)) / (Math.log2(hi) - Math.log2(lo))) * 188;
/** The label width samplesplot.js assumes: 0.6 of its 10 px font a character. */
const labelWidth = (text) => text.length * 6;

describe("axis ticks", () => {
  test("batch sizes: powers of two, at most six", () => {
    expect(batchTicks(0.9, 300, axis(0.9, 300))).toEqual([1, 4, 16, 64, 256]);
    expect(batchTicks(0.9, 2100, axis(0.9, 2100))).toEqual([1, 4, 16, 64, 256, 1024]);
    expect(batchTicks(0.9, 9, axis(0.9, 9))).toEqual([1, 2, 4, 8]);
  });

  test("batch sizes in the millions: fewer ticks, so their labels stay apart and inside", () => {
    // Every octave would put "1,048,576" 31 px from "2,097,152"; 33,554,432 at the right end
    // would run past the panel's edge.
    expect(batchTicks(2 ** 19, 2 ** 25, axis(2 ** 19, 2 ** 25))).toEqual([524_288, 2_097_152, 8_388_608]);
  });

  test("a plot of samples at 1M-4M: the axis starts below them, not at 1, and no labels overlap", () => {
    const samples = [2 ** 20, 2 ** 21, 2 ** 22];
    const report = { ...stubReport(samples), batch_size: 2 ** 20 };
    const plot = createSamplesPlot({ report, predictor: stub({ measuredRange: [2 ** 20, 2 ** 22], maxBatchSize: () => 2 ** 25, minBatchSize: () => 1 }) });
    for (const metric of ["time", "memory"]) {
      const el = panel(plot, metric);
      // From 512Ki (the power of two below half the smallest) to 32Mi: 1Mi a sixth of the way in.
      expect(cx(el, 2 ** 20)).toBeGreaterThan(52);
      expect(cx(el, 2 ** 20)).toBeLessThan(100);
      expect(cx(el, 2 ** 22) - cx(el, 2 ** 20)).toBeGreaterThan(50);
      const labels = [...el.querySelectorAll('.sk-samples-tick[text-anchor="middle"]')]
        .map((t) => ({ x: Number(t.getAttribute("x")), width: labelWidth(t.textContent) }));
      expect(labels.length).toBeGreaterThanOrEqual(2);
      for (const [i, label] of labels.entries()) {
        expect(label.x - label.width / 2).toBeGreaterThanOrEqual(0);
        expect(label.x + label.width / 2).toBeLessThanOrEqual(250);
        if (i > 0) expect(label.x - labels[i - 1].x).toBeGreaterThanOrEqual((label.width + labels[i - 1].width) / 2);
      }
    }
    expect(badAttributes(plot.el)).toEqual([]);
  });

  test("small batch sizes still start at 1 where the smallest sample is 1 or 2", () => {
    const plot = createSamplesPlot({ report: stubReport([2, 8, 32]), predictor: stub({ measuredRange: [2, 32], minBatchSize: () => 1 }) });
    const ticks = [...panel(plot, "time").querySelectorAll('.sk-samples-tick[text-anchor="middle"]')].map((t) => t.textContent);
    expect(ticks[0]).toBe("1");
  });

  test("values: round numbers of the unit, 1-2-5 when a decade is too wide", () => {
    expect(valueTicks(0.8, 1500, 1)).toEqual([1, 10, 100, 1000]);
    expect(valueTicks(15, 90, 1)).toEqual([20, 50]);
    // Bytes in binary units: 5, 10 and 20 MiB, not 4.77 MiB (5 MB).
    expect(valueTicks(3.5 * 2 ** 20, 20 * 2 ** 20, 1024)).toEqual([5 * 2 ** 20, 10 * 2 ** 20, 20 * 2 ** 20]);
    // Within one step of the digits: halves, then tenths of a digit.
    expect(valueTicks(0.1003, 0.225, 1)).toEqual([0.15, 0.2]);
    expect(valueTicks(0.1003, 0.149, 1).map((v) => Math.round(v * 1e4))).toEqual([1100, 1200, 1300, 1400]);
    expect(valueTicks(100, 100.5, 1)).toEqual([100, 100.5]);
  });
});

describe("which phase held each sample's memory peak", () => {
  test("the memory points say where the peak was; time points and samples without phases say nothing", () => {
    const report = small();
    report.samples[0].peak_by_phase = { forward: 10, backward: 12, optimizer: 3 };
    report.samples[1].peak_by_phase = { forward: 20, backward: 15, optimizer: 3 };
    report.samples[2].peak_by_phase = { forward: 1, backward: 2, optimizer: 9, "<b>odd</b>": "nonsense" };
    const plot = plotOf(report);
    const titles = (metric) => points(panel(plot, metric)).map((p) => p.querySelector("title").textContent);
    expect(titles("memory")[0]).toMatch(/^batch 32 \(yours\): .* measured, the peak in the model's backward$/);
    expect(titles("memory")[1]).toMatch(/, the peak in the model's forward$/);
    expect(titles("memory")[2]).toMatch(/, the peak in the optimizer step$/);
    expect(titles("memory")[3]).toMatch(/ measured$/);
    expect(titles("time").every((t) => t.endsWith(" measured"))).toBe(true);
    expect(plot.el.querySelector("b")).toBe(null);
    expect(usableSamples([{ batch_size: 8, iteration_ms: 1, peak_bytes: 5, peak_by_phase: { "<i>x</i>": 7 } }])[0].phase).toBe("<i>x</i>");
  });
});
