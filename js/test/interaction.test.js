import { afterEach, describe, expect, test, vi } from "vitest";
import { formatBytes, formatMs, formatPercent } from "../src/format.js";
import { dragValues } from "../src/bars.js";
import { lineKey, lineStats } from "../src/lines.js";
import { Predictor } from "../src/predict.js";
import { scaleFor } from "../src/tree.js";
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
      .toEqual([["breakdown-time", "fc2", "time"], ["breakdown-memory", "fc2", "weights"], ["breakdown-memory", "fc2", "activations"]]);
    const lit = () => [...view.q("code-view").querySelectorAll(".sk-highlight")].map((r) => r.textContent);
    // Time: the lines where fc2 ran. Weights: also the line that created its parameters.
    expect(lit().some((t) => t.includes("return self.fc2(x)"))).toBe(true);
    expect(lit().some((t) => t.includes("self.fc2 = nn.Linear"))).toBe(false);
    hover(seg(view.q("breakdown-memory"), "fc2", "weights"));
    expect(lit().some((t) => t.includes("self.fc2 = nn.Linear"))).toBe(true);
    expect(lit().some((t) => t.includes("self.fc1 = nn.Linear"))).toBe(false);
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
    // The dragged bar snaps to the chosen batch size's prediction.
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
    // Each marker shows its line's measured time scaled like the iteration, activations like
    // the batch, weights unchanged.
    const p = new Predictor(report.models);
    const scale = scaleFor(report, p, batch);
    const stats = lineStats(report.tree, report.weights, true);
    for (const m of view.qa("line-marker")) {
      const file = m.closest(".sk-code-line").dataset.file;
      const stat = stats.get(lineKey(file, Number(m.dataset.line)));
      const bytes = stat.activationBytes * scale.activationFactor + stat.weightBytes;
      expect(m.textContent).toBe(`${formatMs(stat.timeMs * scale.timeFactor)} \u00b7 ${formatBytes(bytes)}`);
    }
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

  test.each([["below", 0.85], ["above", 1.15]])("measured %s the fitted line: the drag is continuous and never goes the wrong way", (_, factor) => {
    const report = loadReport("small");
    const p = new Predictor(report.models);
    report.throughput = p.predictThroughput(32) * factor; // noise: the measurement is off the line
    view = mount({ report });
    const bar = view.q("throughput-bar");
    const ys = Array.from({ length: 30 }, (_, i) => 250 - i);
    const drawnBefore = Number(bar.getAttribute("aria-valuenow"));
    const seen = dragSequence(bar, ys.slice(0, 2));
    // One pixel up: the bar is still about where it was drawn, and the batch did not drop.
    expect(Math.abs(Number(bar.getAttribute("aria-valuenow")) - drawnBefore)).toBeLessThan(0.02 * p.maxThroughput);
    expect(seen[0]).toBeGreaterThanOrEqual(32);
    let drawn = Number(bar.getAttribute("aria-valuenow"));
    for (const y of ys.slice(2)) {
      pointer(bar, "pointermove", { clientY: y });
      const now = Number(bar.getAttribute("aria-valuenow"));
      expect(now).toBeGreaterThan(drawn); // the bar follows the pointer without a step back
      seen.push(predicted());
      drawn = now;
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]);
    expect(seen.at(-1)).toBeGreaterThan(32);
    // Back down past the start: below 32, never a jump back above it.
    pointer(bar, "pointermove", { clientY: 262 });
    expect(predicted()).toBeLessThan(32);
  });

  test("dragValues: starts on the drawn value, is increasing, and joins the fitted line", () => {
    const args = { start: 100, shown: 90, lo: 0, hi: 200, span: 5 };
    expect(dragValues({ ...args, delta: 0 })).toEqual({ model: 100, shown: 90 });
    let last = -Infinity;
    for (let delta = -60; delta <= 60; delta += 0.5) {
      const { model, shown } = dragValues({ ...args, delta });
      expect(model).toBe(100 + delta);
      expect(shown).toBeGreaterThan(last);
      last = shown;
    }
    expect(dragValues({ ...args, delta: 20 }).shown).toBe(120); // 2·|offset| away: on the line
    expect(dragValues({ ...args, delta: 500 })).toEqual({ model: 200, shown: 200 });
    expect(dragValues({ ...args, shown: 100, delta: 3 })).toEqual({ model: 103, shown: 103 });
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
    key(view.q("memory-bar"), "Enter");
    expect(view.model.get("selected_batch_size")).toBe(1);
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
