import { afterEach, describe, expect, test } from "vitest";
import widget from "../src/index.js";
import { formatInt } from "../src/format.js";
import { Predictor } from "../src/predict.js";
import { indexTree, memorySegments, timeSegments } from "../src/tree.js";
import { fakeModel, key, loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

describe.each(["small", "large", "cnn"])("report_%s renders every part", (name) => {
  test("header, bars, breakdowns, navigation, code view", () => {
    const report = loadReport(name);
    view = mount({ report });
    const { q, qa } = view;
    const summary = qa("summary").map((e) => e.textContent);
    expect(summary).toContain(`Batch size: ${report.batch_size}`);
    expect(summary.some((t) => t.startsWith("Device: "))).toBe(true);
    expect(summary.some((t) => t.startsWith("Max throughput: "))).toBe(true);
    for (const part of ["throughput-bar", "memory-bar", "predicted-batch-size", "breakdown-time",
      "breakdown-memory", "back", "top", "breadcrumb", "code-view", "status", "error"]) {
      expect(q(part), part).not.toBeNull();
    }
    expect(q("predicted-batch-size").textContent).toBe(String(report.batch_size));
    for (const bar of ["throughput-bar", "memory-bar"]) {
      const el = q(bar);
      expect(el.getAttribute("role")).toBe("slider");
      expect(Number(el.getAttribute("aria-valuenow"))).toBeGreaterThan(0);
      expect(el.getAttribute("aria-valuemin")).toBe("0");
      expect(Number(el.getAttribute("aria-valuemax"))).toBeGreaterThan(Number(el.getAttribute("aria-valuenow")));
    }
    expect(Number(q("memory-bar").getAttribute("aria-valuenow"))).toBe(report.peak_bytes);
    // Segments: one per level segment, with the node's path and kind.
    const index = indexTree(report.tree);
    const time = timeSegments(report, index, index.root).segments;
    const memory = memorySegments(report, index, index.root).segments;
    const timeEls = q("breakdown-time").querySelectorAll('[data-skyline="segment"]');
    expect([...timeEls].map((e) => e.dataset.node)).toEqual(time.map((s) => s.path));
    expect([...timeEls].map((e) => e.dataset.kind)).toEqual(time.map((s) => s.kind));
    expect(q("breakdown-memory").querySelectorAll('[data-skyline="segment"]').length).toBe(memory.length);
    expect(q("back").disabled).toBe(true);
    expect(q("breadcrumb").textContent).toBe(report.tree.name);
    expect(qa("line-marker").length).toBeGreaterThan(0);
    expect(qa("line-marker").every((m) => Number(m.dataset.line) > 0)).toBe(true);
    expect(q("status").hidden).toBe(true);
    expect(q("error").hidden).toBe(true);
    expect(qa("knee").length).toBe(2);
  });

  test("the header's iteration time is the time breakdown's total; its max is the bars' top", () => {
    const report = loadReport(name);
    view = mount({ report });
    const summary = view.qa("summary").map((e) => e.textContent);
    const total = view.q("breakdown-time").querySelector(".sk-breakdown-total").textContent;
    expect(summary).toContain(`Iteration: ${total}`);
    const max = view.q("throughput-scale").textContent.match(/^max (.*) up to batch/)[1];
    const where = view.q("max-where")?.textContent;
    expect(summary).toContain(`Max throughput: ${max}${where ? ` \u00b7 ${where}` : ""}`);
    // where the maximum is: a batch size predicted, marked when beyond the measured sizes, or
    // the sample measured with the most throughput
    const p = new Predictor(report.models);
    const at = p.maxThroughputBatchSize;
    const beyond = at !== null && Math.round(at) > p.measuredRange[1];
    const end = at !== null && Math.round(at) === p.maxBatchSize() ? ", the drag's end" : "";
    const best = report.samples.reduce((a, s) => (s.batch_size / s.iteration_ms > a.batch_size / a.iteration_ms ? s : a));
    expect(where).toBe(at === null ? `measured at batch ${formatInt(best.batch_size)}` : `predicted at batch ${formatInt(Math.round(at))}${end}${beyond ? " \u00b7 extrapolated" : ""}`);
  });
});

test("segments widths are shares of the level total, largest first", () => {
  view = mount({ report: loadReport("small") });
  const widths = [...view.q("breakdown-time").querySelectorAll('[data-skyline="segment"]')]
    .map((e) => parseFloat(e.style.width));
  expect(widths.reduce((a, b) => a + b, 0)).toBeCloseTo(100, 1);
  expect(widths).toEqual([...widths].sort((a, b) => b - a));
});

test("status and error traits show and hide; tracebacks fold", () => {
  view = mount({ report: loadReport("small") });
  const { model, q } = view;
  model.set("status", "Profiling batch size 64 (3/4)\u2026");
  expect(q("status").hidden).toBe(false);
  expect(q("status").textContent).toContain("Profiling batch size 64");
  model.set("status", "");
  expect(q("status").hidden).toBe(true);
  model.set("error", "Traceback (most recent call last):\n  File \"<cell>\", line 3\nValueError: no providers found");
  expect(q("error").hidden).toBe(false);
  expect(q("error").querySelector(".sk-error-message").textContent).toBe("ValueError: no providers found");
  expect(q("error").querySelector("pre").textContent).toContain("line 3");
  model.set("error", "");
  expect(q("error").hidden).toBe(true);
});

test("no report yet: a placeholder, and the report arriving later renders", () => {
  view = mount({ report: {}, status: "Profiling\u2026" });
  expect(view.q("summary").textContent).toBe("No profile yet.");
  expect(view.q("status").hidden).toBe(false);
  view.model.set("report", loadReport("small"));
  expect(view.q("predicted-batch-size").textContent).toBe("32");
});

test("a malformed report shows a readable error instead of an empty output", () => {
  const report = loadReport("small");
  report.tree.children = "oops";
  view = mount({ report });
  expect(view.q("error").hidden).toBe(false);
  expect(view.q("error").textContent).toMatch(/Cannot display this report/);
  view.model.set("report", loadReport("small"));
  expect(view.q("error").hidden).toBe(true);
});

test("user strings are text: a module named like HTML stays text", () => {
  const report = loadReport("small");
  const evil = "<img src=x onerror=alert(1)>";
  const fc1 = report.tree.children.find((c) => c.path === "fc1");
  fc1.name = evil;
  fc1.path = evil;
  report.sources[0].code = report.sources[0].code.replace("import torch", `import torch  # ${evil}`);
  report.device.name = evil;
  view = mount({ report, error: evil });
  expect(view.el.querySelector("img")).toBeNull();
  const labels = [...view.el.querySelectorAll(".sk-seg-label")].map((e) => e.textContent);
  expect(labels).toContain(evil);
  expect(view.q("code-view").textContent).toContain(evil);
  expect(view.q("error").textContent).toContain(evil);
  const segment = [...view.el.querySelectorAll('[data-skyline="segment"]')].find((e) => e.dataset.node === evil);
  segment.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
  expect(view.q("tooltip").textContent).toContain(`${evil} (${evil})`);
  segment.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
  expect(view.q("breadcrumb").textContent).toBe(`MLP\u203a${evil}`);
  expect(view.el.querySelector("img")).toBeNull();
});

test("a knee outside the measured sizes is marked as extrapolated, one inside is not", () => {
  const marks = (report) => {
    view?.unmount();
    view = mount({ report });
    return view.qa("knee").map((line) => [line.title, line.classList.contains("sk-knee-extrapolated"),
      line.nextElementSibling.classList.contains("sk-knee-extrapolated")]);
  };
  const inside = marks(loadReport("small")); // knee 84, measured 32-256
  expect(inside.length).toBe(2);
  for (const [title, line, label] of inside) {
    expect(title).toBe("Knee at batch size 84: doubling the batch beyond it gains < 5 % throughput");
    expect([line, label]).toEqual([false, false]);
  }
  const below = marks(loadReport("cnn")); // knee 8, measured 16-128
  for (const [title, line, label] of below) {
    expect(title).toContain("(extrapolated below the measured 16: an estimate)");
    expect([line, label]).toEqual([true, true]);
  }
  const small = loadReport("small");
  small.models = { ...small.models, knee_batch_size: 512 };
  for (const [title, line] of marks(small)) {
    expect(title).toContain("Knee at batch size 512");
    expect(title).toContain("(extrapolated beyond the measured 256: an estimate)");
    expect(line).toBe(true);
  }
});

test("a knee the samples place loosely is marked ≈ with its range in the title, a firm one shows its value", () => {
  const labels = (range) => {
    view?.unmount();
    const report = loadReport("small"); // knee 84, measured 32-256, drag range to 2,048
    report.models = { ...report.models, knee_range: range };
    view = mount({ report });
    return view.qa("knee").map((line) => [line.nextElementSibling.textContent, line.title]);
  };
  for (const [label, title] of labels([82, 89])) { // the fixture's own: within 1.25×
    expect(label).toBe("knee 84");
    expect(title).toBe("Knee at batch size 84: doubling the batch beyond it gains < 5 % throughput");
  }
  for (const [label, title] of labels([41, 145])) {
    expect(label).toBe("knee ≈84");
    expect(title).toBe("Knee at batch size 84: doubling the batch beyond it gains < 5 % throughput. The samples place it loosely: fitted with one measured size left out at a time, it lies between 41 and 145");
  }
  expect(view.q("samples-note").textContent).not.toContain("knee");
  // wider than 4×, or past the drag's end: no line, and the samples' note says where it could be
  for (const [range, where] of [[[1, 209], "from 1 to 209"], [[60, null], "from 60 to past the drag's end"]]) {
    expect(labels(range)).toEqual([]);
    expect(view.q("samples-note").textContent).toContain(`no knee drawn: the samples put it anywhere ${where}`);
  }
  // a range that does not hold the knee (not one Python writes) is no range: the value shows
  for (const range of [[90, 120], [10, 20], [0, 100], "41-145"]) {
    expect(labels(range).map(([label]) => label)).toEqual(["knee 84", "knee 84"]);
  }
  expect(new Predictor({ ...loadReport("small").models, knee_range: [41, 145] }).kneeRange).toEqual([41, 145]);
  const { knee_range: _r, ...old } = loadReport("small").models;
  expect(new Predictor(old).kneeRange).toBe(null);
});

test("drag is disabled, with the reason, when the models cannot predict", () => {
  const report = loadReport("small");
  report.models = { ...report.models, can_manipulate: false, reason: "only 2 batch size(s) could be measured" };
  view = mount({ report });
  expect(view.q("throughput-bar").getAttribute("aria-disabled")).toBe("true");
  expect(view.q("drag-reason").textContent).toContain("only 2 batch size(s)");
  expect(view.qa("knee").length).toBe(0);
  expect(new Predictor(report.models).canManipulate).toBe(false);
});

test("the profiler's warnings show under the header, as text, and go with a clean report", () => {
  const report = loadReport("small");
  const evil = "<img src=x onerror=alert(1)>";
  report.warnings = ["the iteration at cell 3 returned a NaN/inf loss", `module ${evil} ran twice`];
  view = mount({ report });
  const items = [...view.q("warnings").querySelectorAll("li")].map((e) => e.textContent);
  expect(items).toEqual(report.warnings);
  expect(view.q("warnings").getAttribute("role")).toBe("note");
  expect(view.el.querySelector("img")).toBeNull();
  view.model.set("report", { ...report, warnings: [] });
  expect(view.q("warnings")).toBeNull();
  expect(view.qa("summary").length).toBeGreaterThan(0);
});

test("a step timed at one thread on a busy machine sits beside the iteration, and only then", () => {
  const report = loadReport("small");
  report.iteration_ms = 3870;
  report.one_thread = { threads: 2, one_thread_ms: 243 };
  view = mount({ report });
  const items = view.qa("summary");
  const texts = items.map((e) => e.textContent);
  const at = texts.indexOf("At 1 thread: 243 ms");
  expect(at).toBe(texts.indexOf("Iteration: 3.87 s") + 1);
  expect(items[at].title).toBe("the same step at one torch thread, timed because the machine was busy: 15.9\u00d7 the speed at 2 threads");
  view.model.set("report", { ...report, one_thread: null });
  expect(view.qa("summary").map((e) => e.textContent).some((t) => t.startsWith("At 1 thread"))).toBe(false);
  view.model.set("report", { ...report, one_thread: { threads: 2, one_thread_ms: -1 } });
  expect(view.qa("summary").map((e) => e.textContent).some((t) => t.startsWith("At 1 thread"))).toBe(false);
});

test("a report without models still renders measured bars", () => {
  const report = loadReport("small");
  report.models = null;
  view = mount({ report });
  expect(Number(view.q("throughput-bar").getAttribute("aria-valuenow"))).toBeCloseTo(report.throughput, 0);
  expect(view.q("drag-reason").textContent).toMatch(/no performance models/);
});

test("cleanup removes the DOM and the model listeners", () => {
  view = mount({ report: loadReport("small") });
  expect(view.model.listenerCount()).toBeGreaterThan(0);
  view.unmount();
  expect(view.model.listenerCount()).toBe(0);
  expect(view.el.querySelector(".skyline-nb")).toBeNull();
  view = null;
});

test("two views of one model: a batch size chosen in one shows in the other", () => {
  view = mount({ report: loadReport("small") });
  const el2 = document.createElement("div");
  document.body.append(el2);
  const cleanup2 = widget.render({ model: view.model, el: el2 });
  view.model.set("selected_batch_size", 100);
  expect(view.q("predicted-batch-size").textContent).toBe("100");
  expect(el2.querySelector('[data-skyline="predicted-batch-size"]').textContent).toBe("100");
  cleanup2();
  expect(el2.childElementCount).toBe(0);
});

test("a new view of a dragged model starts at the chosen batch size", () => {
  view = mount({ report: loadReport("small"), selected_batch_size: 77 });
  expect(view.q("predicted-batch-size").textContent).toBe("77");
  // A report a measurement joined (live.py: the selection stays) is drawn where the drag ended.
  view.model.set("report", loadReport("small"));
  expect(view.q("predicted-batch-size").textContent).toBe("77");
  // A re-profile clears the selection before its report (live.py): its own measured batch size.
  view.model.set("selected_batch_size", null);
  view.model.set("report", loadReport("small"));
  expect(view.q("predicted-batch-size").textContent).toBe("32");
});

test("a kernel that says nobody serves the widget (live = false): no action buttons", () => {
  const el = document.createElement("div");
  const model = fakeModel({ report: loadReport("small"), live: false });
  model.send = () => {};
  const cleanup = widget.render({ model, el });
  expect(el.querySelector('[data-skyline="reprofile"]')).toBeNull();
  cleanup();
});

test("the edit's confirmation shows right under the bars a drag ends on, above the samples", async () => {
  view = mount({ report: loadReport("small") });
  const { q } = view;
  key(q("throughput-bar"), "ArrowUp");
  key(q("throughput-bar"), "Enter");
  await new Promise((r) => setTimeout(r, 0));
  const notice = q("edit-status");
  expect(notice.hidden).toBe(false);
  expect(q("copy-text").value).toBe("batch_size = 33"); // no notebook here: the line to copy
  // In the bars' column, next after the batch size they show; the samples plot and the
  // breakdowns come after it, the code view far below.
  const parts = [...q("bars").children].map((e) => e.dataset.skyline || e.className);
  expect(parts).toEqual(["sk-bars-row", "sk-batch", "extrapolated", "edit-status", "sk-actions", "samples-plot"]);
  expect(Boolean(notice.compareDocumentPosition(q("code-view")) & Node.DOCUMENT_POSITION_FOLLOWING)).toBe(true);
});

test("the header says where its maximum throughput is, and when the samples do not reach it", () => {
  const where = (report) => {
    view?.unmount();
    view = mount({ report });
    const item = view.qa("summary").find((e) => e.textContent.startsWith("Max throughput"));
    return [view.q("max-where")?.textContent, item.title];
  };
  const small = loadReport("small"); // measured 32…256, the range up to 8× the largest
  const [beyond, title] = where(small);
  // the range's top: where the drag stops while the throughput still grows, not a best size
  expect(beyond).toBe("predicted at batch 2,048, the drag's end \u00b7 extrapolated");
  expect(title).toMatch(/at batch 2,048, where the drag range ends and the throughput still grows, extrapolated beyond the measured 256; the samples do not reach it/);
  // a steeper line from 128 on (a convex curve): the most throughput is where it takes over,
  // inside the measured sizes: predicted, not extrapolated
  const [line] = small.models.time.lines;
  const steep = { slope: 3 * line.slope, intercept: line.intercept - 256 * line.slope };
  const time = { ...small.models.time, shape: "convex", lines: [line, steep], ...steep };
  const models = { ...small.models, time, knee_batch_size: null, measured_max_throughput: null };
  const inside = where({ ...small, models });
  expect(inside[0]).toBe("predicted at batch 128");
  expect(inside[1]).not.toMatch(/extrapolated/);
  const cnn = loadReport("cnn");
  const best = cnn.samples.reduce((a, s) => (s.batch_size / s.iteration_ms > a.batch_size / a.iteration_ms ? s : a));
  // a sample's throughput is the best: which one
  expect(where(cnn)).toEqual([`measured at batch ${formatInt(best.batch_size)}`,
    expect.stringMatching(new RegExp(`^the most throughput measured at batch ${formatInt(best.batch_size)}; none predicted`))]);
  // a curve through the origin below the smallest sample (a busy CNN's convex one, session
  // 57): the throughput at batch 1 ties the sample's to the last digit; the sample's it is
  const t = [94.2019705, 191.31651476364118, 395.61714062391036, 979.7755940498498];
  const busy = {
    ...cnn,
    samples: [16, 32, 64, 128].map((b, i) => ({ ...cnn.samples[0], batch_size: b, iteration_ms: t[i] })),
    models: {
      ...cnn.models,
      time: { shape: "convex", slope: 9.127475834780304, intercept: -188.5413128020291,
        lines: [{ slope: 5.88762315625, intercept: 0 }, { slope: 6.294470117660316, intercept: -7.948342430134602 },
          { slope: 9.127475834780304, intercept: -188.5413128020291 }] },
      measured_range: [16, 128], measured_max_throughput: 1000 * 16 / t[0], knee_batch_size: 1, knee_range: null,
    },
  };
  expect(new Predictor(busy.models).predictThroughput(1)).toBeCloseTo(1000 * 16 / t[0], 9);
  expect(where(busy)[0]).toBe("measured at batch 16");
});
