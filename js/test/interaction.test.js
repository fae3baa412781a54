import { afterEach, describe, expect, test, vi } from "vitest";
import { dragBatch } from "../src/bars.js";
import { formatBytes, formatInt, formatMs, formatPercent, formatThroughput } from "../src/format.js";
import { lineKey, lineStats } from "../src/lines.js";
import { Predictor } from "../src/predict.js";
import { scaledTime, scaleFor } from "../src/tree.js";
import { key, loadReport, mount, pointer, setRect } from "./helpers.js";

let view;
afterEach(() => {
  view?.unmount();
  vi.useRealTimers();
});

const segs = (container) => [...container.querySelectorAll('[data-skyline="segment"]')];
const seg = (container, path, category) => segs(container)
  .find((e) => e.dataset.node === path && (!category || e.dataset.category === category));
const hover = (el, x = 100, y = 50) => el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: x, clientY: y }));
const predicted = () => Number(view.q("predicted-batch-size").textContent);

describe("hover", () => {
  test("tooltip: name, value and % of the level total, file:line", () => {
    const report = loadReport("small");
    view = mount({ report });
    const fc1 = report.tree.children.find((c) => c.path === "fc1");
    hover(seg(view.q("breakdown-time"), "fc1"));
    const tip = view.q("tooltip");
    expect(tip.hidden).toBe(false);
    expect(tip.querySelector(".sk-tooltip-title").textContent).toBe("fc1 (Linear)");
    const share = (fc1.forward_ms + fc1.backward_ms) / report.iteration_ms;
    expect(tip.querySelector(".sk-tooltip-value").textContent).toBe(`1.23 ms \u00b7 ${formatPercent(share)} of MLP`);
    expect(tip.textContent).toContain("double-click to open");
    hover(seg(view.q("breakdown-memory"), "fc1", "activations"));
    const act = fc1.activation_bytes / report.peak_bytes;
    expect(tip.querySelector(".sk-tooltip-value").textContent).toContain(formatPercent(act));
    expect(tip.querySelector(".sk-tooltip-title").textContent).toBe("fc1 (Linear) \u2014 activations");
    expect(tip.querySelector(".sk-tooltip-path").textContent).toBe("module fc1");
    // the remainder is "other" and nothing else: no "untracked [untracked]" under it
    hover(seg(view.q("breakdown-memory"), "untracked"));
    expect(tip.querySelector(".sk-tooltip-title").textContent).toBe("other");
    expect(tip.querySelector(".sk-tooltip-path")).toBeNull();
    hover(seg(view.q("breakdown-time"), "optimizer"));
    expect(tip.querySelector(".sk-tooltip-path")).toBeNull();
    // An op's tooltip names where it ran.
    hover(seg(view.q("breakdown-time"), "/_log_softmax#0"));
    expect(tip.querySelector(".sk-tooltip-frames").textContent).toMatch(/^cell 5f0c2a9e:\d+$/);
    view.q("breakdown-time").dispatchEvent(new MouseEvent("mouseleave"));
    expect(tip.hidden).toBe(true);
  });

  test("linked highlight across both breakdowns and the code lines", () => {
    view = mount({ report: loadReport("small") });
    hover(seg(view.q("breakdown-time"), "fc2"));
    const linked = [...view.el.querySelectorAll(".sk-linked")];
    expect(linked.map((e) => [e.closest("[data-skyline^=breakdown]").dataset.skyline, e.dataset.node, e.dataset.category]))
      .toEqual([["breakdown-time", "fc2", "time"], ["breakdown-memory", "fc2", "weights"], ["breakdown-memory", "fc2", "activations"], ["breakdown-memory", "fc2", "grads"]]);
    const lit = () => [...view.q("code-view").querySelectorAll(".sk-highlight")].map((r) => r.textContent);
    // Time: the lines where fc2 ran. Weights: also the line that created its parameters.
    expect(lit().some((t) => t.includes("return self.fc2(x)"))).toBe(true);
    expect(lit().some((t) => t.includes("self.fc2 = nn.Linear"))).toBe(false);
    hover(seg(view.q("breakdown-memory"), "fc2", "weights"));
    expect(lit().some((t) => t.includes("self.fc2 = nn.Linear"))).toBe(true);
    expect(lit().some((t) => t.includes("self.fc1 = nn.Linear"))).toBe(false);
  });

  test("a share is of the drawn bar: never more than 100 % beside a negative remainder", () => {
    // Issue 12: "85.8 ms · 148.5 % of GRUClassifier" from a report whose untracked time was
    // negative. Profiles no longer carry one in the tree (profiler/tree.py); older ones may.
    const report = loadReport("small");
    const untracked = report.tree.children.find((c) => c.kind === "untracked");
    untracked.forward_ms = -1.5;
    view = mount({ report });
    const level = [...report.tree.children].filter((c) => c.kind !== "untracked");
    const positive = level.reduce((n, c) => n + c.forward_ms + (c.backward_ms ?? 0), 0);
    const fc1 = report.tree.children.find((c) => c.path === "fc1");
    hover(seg(view.q("breakdown-time"), "fc1"));
    const share = (fc1.forward_ms + fc1.backward_ms) / positive;
    expect(share).toBeLessThan(1);
    expect(view.q("tooltip").querySelector(".sk-tooltip-value").textContent).toContain(`${formatPercent(share)} of MLP`);
  });

  test("a negative untracked segment is a labelled chip, not a hidden zero-width slice", () => {
    const report = loadReport("small");
    report.tree.children.find((c) => c.kind === "untracked").forward_ms = -0.2;
    view = mount({ report });
    const chip = seg(view.q("breakdown-time"), "untracked");
    expect(chip.dataset.negative).toBe("true");
    expect(chip.textContent).toBe("untracked \u2212200 \u00b5s");
    hover(chip);
    expect(view.q("tooltip").textContent).toContain("negative");
  });
});

describe("drill-down", () => {
  test("double-click drills, Back and Top return, breadcrumbs jump", () => {
    view = mount({ report: loadReport("large") });
    const { q } = view;
    const dbl = (el) => el.dispatchEvent(new MouseEvent("dblclick", { bubbles: true, cancelable: true }));
    dbl(seg(q("breakdown-time"), "layer2"));
    expect(segs(q("breakdown-time")).map((e) => e.dataset.node).sort()).toEqual(["layer2.0", "layer2.1", "layer2.2", "layer2.3"]);
    expect(q("breadcrumb").textContent).toBe("ResNet\u203alayer2");
    dbl(seg(q("breakdown-time"), "layer2.0"));
    dbl(seg(q("breakdown-memory"), "layer2.0.downsample", "weights"));
    expect(q("breadcrumb").querySelectorAll(".sk-crumb").length).toBe(4);
    expect(q("back").disabled).toBe(false);
    // Ops are leaves: double-clicking one does nothing.
    dbl(seg(q("breakdown-time"), "layer2.0.downsample.0"));
    dbl(seg(q("breakdown-time"), "layer2.0.downsample.0/convolution#0"));
    expect(q("breadcrumb").querySelector('[aria-current]').dataset.path).toBe("layer2.0.downsample.0");
    q("back").click();
    expect(q("breadcrumb").querySelector('[aria-current]').dataset.path).toBe("layer2.0.downsample");
    q("breadcrumb").querySelector('button[data-depth="1"]').click();
    expect(q("breadcrumb").querySelector('[aria-current]').dataset.path).toBe("layer2");
    q("top").click();
    expect(q("breadcrumb").textContent).toBe("ResNet");
    expect(q("back").disabled).toBe(true);
  });

  test("the code view follows the drill level", () => {
    view = mount({ report: loadReport("small") });
    const lines = () => view.qa("line-marker").map((m) => Number(m.dataset.line));
    const atRoot = lines();
    seg(view.q("breakdown-time"), "fc2").dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    expect(lines().length).toBeLessThan(atRoot.length);
    expect(view.q("code-view").textContent).toContain("Source of fc2");
  });

  test("Enter on a focused segment drills too (keyboard users)", () => {
    view = mount({ report: loadReport("small") });
    key(seg(view.q("breakdown-time"), "fc1"), "Enter");
    expect(view.q("breadcrumb").textContent).toBe("MLP\u203afc1");
  });

  test("the drill level survives a re-profiled report", () => {
    view = mount({ report: loadReport("large") });
    seg(view.q("breakdown-time"), "layer4").dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    view.model.set("report", loadReport("large"));
    expect(view.q("breadcrumb").querySelector("[aria-current]").dataset.path).toBe("layer4");
  });
});

describe("code view", () => {
  test("clicking a line selects it, highlights its segments and dispatches skyline-reveal-line", () => {
    const report = loadReport("small");
    view = mount({ report });
    const events = [];
    document.addEventListener("skyline-reveal-line", (e) => events.push(e.detail), { once: true });
    const row = [...view.q("code-view").querySelectorAll(".sk-code-line")].find((r) => r.textContent.includes("return self.fc2(x)"));
    row.click();
    expect(row.classList.contains("sk-selected")).toBe(true);
    expect(events).toEqual([{ cellId: report.sources[0].cell_id, file: report.sources[0].file, line: Number(row.dataset.line) }]);
    const linked = new Set([...view.el.querySelectorAll(".sk-linked")].map((e) => e.dataset.node));
    expect([...linked]).toEqual(["fc2"]);
    expect(lineKey(report.sources[0].file, 14)).toBe(`${report.sources[0].file}\n14`);
  });
});

describe("dragging the key-metric bars", () => {
  function dragSequence(bar, ys) {
    setRect(bar, { top: 100, height: 200 });
    pointer(bar, "pointerdown", { clientY: ys[0] });
    const seen = [];
    for (const y of ys.slice(1)) {
      pointer(bar, "pointermove", { clientY: y });
      seen.push(predicted());
    }
    return seen;
  }

  test("throughput up raises the predicted batch size monotonically and updates memory live", () => {
    const report = loadReport("small");
    const p = new Predictor(report.models);
    view = mount({ report });
    const memBefore = Number(view.q("memory-bar").getAttribute("aria-valuenow"));
    const memTotal = () => view.q("breakdown-memory").querySelector(".sk-breakdown-total").textContent;
    const totalBefore = memTotal();
    const ys = Array.from({ length: 12 }, (_, i) => 250 - i * 4);
    const seen = dragSequence(view.q("throughput-bar"), ys);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
    const last = seen.at(-1);
    expect(last).toBeGreaterThan(report.batch_size);
    expect(Number(view.q("memory-bar").getAttribute("aria-valuenow"))).toBe(Math.round(p.predictPeakBytes(last)));
    expect(Number(view.q("memory-bar").getAttribute("aria-valuenow"))).toBeGreaterThan(memBefore);
    expect(memTotal()).not.toBe(totalBefore);
    expect(view.q("breakdown-memory").textContent).toContain("predicted");
    // The drag ended: the trait is set and saved once.
    expect(view.model.get("selected_batch_size")).toBe(null);
    pointer(view.q("throughput-bar"), "pointerup", { clientY: ys.at(-1) });
    expect(view.model.get("selected_batch_size")).toBe(last);
    expect(view.model.saved).toBe(1);
    // The bar shows the prediction at the chosen batch size, during the drag and after it.
    expect(Number(view.q("throughput-bar").getAttribute("aria-valuenow"))).toBeCloseTo(p.predictThroughput(last), 1);
  });

  test("the code view's line markers follow the predicted batch size live", () => {
    const report = loadReport("small");
    view = mount({ report });
    const texts = () => view.qa("line-marker").map((m) => m.textContent);
    const before = texts();
    expect(before.length).toBeGreaterThan(0);
    expect(view.qa("line-marker").some((m) => m.title.includes("predicted"))).toBe(false);
    const bar = view.q("throughput-bar");
    dragSequence(bar, [250, 210, 170]);
    const batch = predicted();
    expect(batch).toBeGreaterThan(report.batch_size);
    const during = texts();
    expect(during).not.toEqual(before);
    for (const m of view.qa("line-marker")) {
      expect(m.title).toContain(`predicted at batch size ${batch}`);
      expect(m.classList.contains("sk-predicted")).toBe(true);
    }
    // Each marker shows its line's measured time scaled as the segments are (the optimizer
    // step's part kept), activations like the batch, weights unchanged.
    const p = new Predictor(report.models);
    const scale = scaleFor(report, p, batch);
    const stats = lineStats(report.tree, report.weights, true);
    for (const m of view.qa("line-marker")) {
      const file = m.closest(".sk-code-line").dataset.file;
      const stat = stats.get(lineKey(file, Number(m.dataset.line)));
      const bytes = stat.activationBytes * scale.activationFactor + stat.weightBytes;
      expect(m.textContent).toBe(`${formatMs(scaledTime(scale, stat.timeMs, stat.optimizerMs))} \u00b7 ${formatBytes(bytes)}`);
    }
    // `opt.step()` ran only the optimizer: its 0.12 ms do not grow with the batch, as its segment's.
    const step = view.qa("line-marker").find((m) => m.dataset.line === "28");
    expect(step.textContent).toBe(`${formatMs(0.12)} \u00b7 0 B`);
    expect(step.textContent).toBe(before[view.qa("line-marker").indexOf(step)]);
  });

  test("memory down lowers the predicted batch size monotonically", () => {
    view = mount({ report: loadReport("large") });
    const ys = Array.from({ length: 10 }, (_, i) => 200 + i * 3);
    const seen = dragSequence(view.q("memory-bar"), ys);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeLessThanOrEqual(seen[i - 1]);
    expect(seen.at(-1)).toBeLessThan(64);
  });

  test("the drag keeps following the pointer far outside the bar, within [1, max]", () => {
    const report = loadReport("small");
    view = mount({ report });
    dragSequence(view.q("throughput-bar"), [200, -5000]);
    expect(predicted()).toBe(report.models.max_batch_size);
    pointer(view.q("throughput-bar"), "pointermove", { clientY: 9000 });
    expect(predicted()).toBe(1);
  });

  test.each([["below", 0.85], ["above", 1.15]])("measured %s the fitted line: the value shown mid-drag is the value committed", (_, factor) => {
    // Issue 12: the bar showed 356 samples/s mid-drag and snapped to 305 on release. It drew
    // the measured value's offset from the line, blended away over the drag, while the batch
    // came from the line; now both bars always show the prediction at the batch chosen.
    const report = loadReport("small");
    const p = new Predictor(report.models);
    report.throughput = p.predictThroughput(32) * factor; // noise: the measurement is off the line
    view = mount({ report });
    const bar = view.q("throughput-bar");
    const value = () => bar.parentElement.querySelector(".sk-bar-value").textContent;
    const ys = Array.from({ length: 40 }, (_, i) => 250 - i);
    const seen = dragSequence(bar, ys);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
    const batch = seen.at(-1);
    expect(batch).toBeGreaterThan(32);
    const during = [value(), bar.getAttribute("aria-valuenow"), bar.querySelector(".sk-bar-fill").style.height];
    expect(during[0]).toBe(formatThroughput(p.predictThroughput(batch)));
    pointer(bar, "pointerup", { clientY: ys.at(-1) });
    expect(view.model.get("selected_batch_size")).toBe(batch);
    expect([value(), bar.getAttribute("aria-valuenow"), bar.querySelector(".sk-bar-fill").style.height]).toEqual(during);
  });

  test("dragBatch: geometric, monotone, bounded, and back where it started", () => {
    const args = { start: 32, height: 200, top: 2048 };
    expect(dragBatch({ ...args, moved: 0 })).toBe(32);
    let last = 0;
    for (let moved = -300; moved <= 300; moved += 1) {
      const b = dragBatch({ ...args, moved });
      expect(b).toBeGreaterThanOrEqual(last);
      expect(b).toBeGreaterThanOrEqual(1);
      expect(b).toBeLessThanOrEqual(2048);
      last = b;
    }
    expect(dragBatch({ ...args, moved: 200 })).toBe(2048); // a full track spans the range
    expect(dragBatch({ ...args, moved: -200 })).toBe(1);
    expect(dragBatch({ start: 1, moved: 50, height: 200, top: 1 })).toBe(1);
  });

  test("a few pixels never jump by orders of magnitude, up to the top of the range", () => {
    const report = loadReport("small");
    const top = report.models.max_batch_size;
    view = mount({ report });
    const ys = Array.from({ length: 401 }, (_, i) => 400 - i); // 1 px steps, twice the track
    const seen = dragSequence(view.q("throughput-bar"), ys);
    const perPixel = top ** (1 / 200);
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
      expect(seen[i]).toBeLessThanOrEqual(Math.max(seen[i - 1] + 1, Math.ceil(seen[i - 1] * perPixel * 1.001)));
    }
    expect(seen.at(-1)).toBe(top);
  });

  test("the top of each bar is the top of the drag range, not an asymptote or the RAM", () => {
    const report = loadReport("small"); // CPU without a memory budget
    const p = new Predictor(report.models);
    const top = p.maxBatchSize();
    view = mount({ report });
    const fill = (name) => view.q(`${name}-bar`).querySelector(".sk-bar-fill").style.height;
    key(view.q("throughput-bar"), "End");
    expect(predicted()).toBe(top);
    expect(fill("throughput")).toBe("100%");
    expect(fill("memory")).toBe("100%");
    expect(view.q("throughput-scale").textContent).toBe(`max ${formatThroughput(p.maxThroughput)} up to batch ${formatInt(top)}`);
    expect(p.maxThroughput).toBeLessThan(1000 / report.models.time.slope);
    expect(view.q("memory-scale").textContent).toBe(`max ${formatBytes(p.predictPeakBytes(top))} up to batch ${formatInt(top)}`);
    expect(view.q("memory-scale").textContent).not.toContain(formatBytes(report.models.capacity_bytes));
  });

  test("with a real memory bound the memory bar is scaled to the capacity", () => {
    const report = loadReport("large");
    view = mount({ report });
    expect(view.q("memory-scale").textContent).toBe(`of ${formatBytes(report.models.capacity_bytes)}`);
  });

  test("predictions outside the measured sizes are marked as extrapolated", () => {
    vi.useFakeTimers();
    const report = loadReport("small");
    const [lo, hi] = report.models.measured_range;
    view = mount({ report });
    const note = view.q("extrapolated");
    expect(note.hidden).toBe(true);
    key(view.q("memory-bar"), "End");
    expect(note.hidden).toBe(false);
    expect(note.textContent).toBe(`The prediction is extrapolated beyond the measured ${hi}.`);
    key(view.q("memory-bar"), "Home");
    expect(note.textContent).toBe(`The prediction is extrapolated below the measured ${lo}.`);
    for (let i = 0; i < 31; i++) key(view.q("memory-bar"), "ArrowUp");
    expect(predicted()).toBe(32);
    expect(note.hidden).toBe(true);
  });

  test("pressing without moving does not change the batch size", () => {
    view = mount({ report: loadReport("small") });
    const bar = view.q("throughput-bar");
    setRect(bar);
    pointer(bar, "pointerdown", { clientY: 20 });
    pointer(bar, "pointerup", { clientY: 20 });
    expect(predicted()).toBe(32);
    expect(view.model.saved).toBe(0);
  });

  test("keyboard: arrows step the batch size, Home/End jump, a pause commits", () => {
    vi.useFakeTimers();
    const report = loadReport("small");
    view = mount({ report });
    const bar = view.q("throughput-bar");
    key(bar, "ArrowUp");
    key(bar, "ArrowUp");
    key(bar, "PageUp");
    expect(predicted()).toBe(32 + 2 + 3);
    key(bar, "ArrowDown");
    expect(predicted()).toBe(36);
    expect(view.model.saved).toBe(0); // a burst of keys is one edit
    vi.advanceTimersByTime(1000);
    expect(view.model.get("selected_batch_size")).toBe(36);
    key(view.q("memory-bar"), "End");
    expect(predicted()).toBe(report.models.max_batch_size);
    key(view.q("memory-bar"), "Home");
    expect(predicted()).toBe(1);
    key(view.q("memory-bar"), "ArrowDown");
    expect(predicted()).toBe(1);
    // What the keys show is what is committed: the bars do not move on commit.
    const shown = view.q("memory-bar").getAttribute("aria-valuenow");
    key(view.q("memory-bar"), "Enter");
    expect(view.model.get("selected_batch_size")).toBe(1);
    expect(view.q("memory-bar").getAttribute("aria-valuenow")).toBe(shown);
  });

  test("a report whose lines cannot support a drag is not draggable, and says why", () => {
    const report = loadReport("small");
    // An edited report claiming a drag: its time curve costs −1 ms at batch 0.
    report.models.time.lines = [{ slope: report.models.time.slope, intercept: -1 }];
    view = mount({ report });
    expect(view.q("throughput-bar").getAttribute("aria-disabled")).toBe("true");
    expect(view.q("drag-reason").textContent).toBe("Dragging is off: the time line has a negative fixed cost per iteration");
    expect(view.q("throughput-scale").textContent).toBe("measured");
    const header = view.q("header").textContent;
    expect(header).toContain("Max throughput: \u2014");
  });

  test("disabled bars ignore pointer and keys", () => {
    const report = loadReport("small");
    report.models.can_manipulate = false;
    view = mount({ report });
    const bar = view.q("throughput-bar");
    setRect(bar);
    pointer(bar, "pointerdown", { clientY: 200 });
    pointer(bar, "pointermove", { clientY: 0 });
    key(bar, "ArrowUp");
    expect(predicted()).toBe(32);
  });
});
