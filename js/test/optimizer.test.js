// The optimizer step in the time breakdown: its tooltips name the phase it ran in (neither
// forward nor backward), and a predicted batch size keeps its time, which does not depend on the
// batch (it touches parameters only), while the rest takes what is left of the predicted
// iteration, so the root level still sums to the model's prediction.
import { afterEach, describe, expect, test } from "vitest";
import { formatMs } from "../src/format.js";
import { lineKey, lineStats } from "../src/lines.js";
import { Predictor } from "../src/predict.js";
import { applyScale, indexTree, scaledTime, scaleFor, timeSegments } from "../src/tree.js";
import { key, loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

// The small report: iteration 1.84 ms at batch 32, of which SGD 0.12 ms (its one op,
// optimizer/_foreach_add_#0) and 0.24 ms untracked; fc1 0.42 ms forward, 0.81 ms backward.
const OPTIMIZER_MS = 0.12;
const report = loadReport("small");
const predictor = new Predictor(report.models);
const index = indexTree(report.tree);
const byPath = (level, path) => level.segments.find((s) => s.path === path);

describe("predicted times: the optimizer's stays", () => {
  test("the optimizer keeps its measured time, the rest scales by (T - O) / (T_measured - O)", () => {
    const level = timeSegments(report, index, index.root);
    const scale = scaleFor(report, predictor, 256);
    const predictedMs = predictor.predictIterationMs(256);
    expect(scale.timeFactor).toBeCloseTo((predictedMs - OPTIMIZER_MS) / (report.iteration_ms - OPTIMIZER_MS), 12);
    applyScale(level, scale);
    expect(byPath(level, "optimizer").value).toBe(OPTIMIZER_MS);
    expect(byPath(level, "fc1").value).toBeCloseTo((0.42 + 0.81) * scale.timeFactor, 12);
    expect(byPath(level, "untracked").value).toBeCloseTo(0.24 * scale.timeFactor, 12);
    // The invariant: the top-level segments add up to the predicted iteration time.
    expect(level.total).toBeCloseTo(predictedMs, 9);
  });

  test("inside the optimizer every part keeps its time", () => {
    const level = timeSegments(report, index, index.byPath.get("optimizer"));
    applyScale(level, scaleFor(report, predictor, 512));
    expect(level.segments.map((s) => [s.path, s.value])).toEqual([["optimizer/_foreach_add_#0", OPTIMIZER_MS]]);
  });

  test("a prediction the optimizer alone would exceed falls back to one factor for all", () => {
    const quick = { ...predictor, canManipulate: true, predictIterationMs: () => 0.1, predictPeakBytes: (b) => predictor.predictPeakBytes(b), peakPhaseAt: (b) => predictor.peakPhaseAt(b) };
    const scale = scaleFor(report, quick, 64);
    expect(scale.timeFactor).toBeCloseTo(0.1 / report.iteration_ms, 12);
    expect(scale.optimizerTimeFactor).toBe(scale.timeFactor);
    const level = applyScale(timeSegments(report, index, index.root), scale);
    expect(byPath(level, "optimizer").value).toBeCloseTo(OPTIMIZER_MS * scale.timeFactor, 12);
    expect(level.total).toBeCloseTo(0.1, 9);
  });

  test("code lines keep the optimizer's part of their time apart, to scale it as the segments", () => {
    const src = report.sources[0];
    const lineOf = (text) => src.code.split("\n").findIndex((l) => l.includes(text)) + 1;
    const stats = lineStats(index.root, report.weights, true);
    const step = stats.get(lineKey(src.file, lineOf("opt.step()")));
    expect([step.timeMs, step.optimizerMs]).toEqual([OPTIMIZER_MS, OPTIMIZER_MS]);
    expect(stats.get(lineKey(src.file, lineOf("x = self.act(self.fc1(x))"))).optimizerMs).toBe(0);
    const scale = scaleFor(report, predictor, 256);
    expect(scaledTime(scale, step.timeMs, step.optimizerMs)).toBe(OPTIMIZER_MS);
    // Drilled into the optimizer, the level itself is the step's.
    const inside = lineStats(index.byPath.get("optimizer"), report.weights, false, true);
    expect(inside.get(lineKey(src.file, lineOf("opt.step()"))).optimizerMs).toBe(OPTIMIZER_MS);
  });
});

describe("phase lines in the time tooltips", () => {
  const segment = (path) => [...view.q("breakdown-time").querySelectorAll('[data-skyline="segment"]')].find((e) => e.dataset.node === path);
  const hover = (el) => el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: 10, clientY: 10 }));
  const tooltipLines = () => [...view.q("tooltip").children].map((line) => line.textContent);
  const phaseLine = () => tooltipLines().find((t) => /^(forward|backward|optimizer) /.test(t)) ?? null;

  test("a module: forward and backward; the optimizer and its ops: optimizer; untracked: none", () => {
    view = mount({ report: loadReport("small") });
    hover(segment("fc1"));
    expect(phaseLine()).toBe(`forward ${formatMs(0.42)} \u00b7 backward ${formatMs(0.81)}`);
    hover(segment("optimizer"));
    expect(tooltipLines()[0]).toBe("SGD");
    expect(phaseLine()).toBe(`optimizer ${formatMs(OPTIMIZER_MS)}`);
    hover(segment("untracked"));
    expect(tooltipLines()[0]).toBe("untracked");
    expect(phaseLine()).toBe(null);
    expect(tooltipLines().join("\n")).not.toMatch(/forward|backward/);
    segment("optimizer").dispatchEvent(new MouseEvent("dblclick", { bubbles: true, cancelable: true }));
    hover(segment("optimizer/_foreach_add_#0"));
    expect(phaseLine()).toBe(`optimizer ${formatMs(OPTIMIZER_MS)}`);
  });

  test("at a predicted batch size the optimizer's phase line keeps its time, the model's scale", () => {
    view = mount({ report: loadReport("small") });
    for (let i = 0; i < 20; i += 1) key(view.q("throughput-bar"), "PageUp");
    const batch = Number(view.q("predicted-batch-size").textContent);
    expect(batch).toBeGreaterThan(report.batch_size);
    const scale = scaleFor(report, predictor, batch);
    hover(segment("optimizer"));
    expect(phaseLine()).toBe(`optimizer ${formatMs(OPTIMIZER_MS)}`);
    expect(tooltipLines()).toContain(`predicted at batch size ${batch}`);
    hover(segment("fc1"));
    expect(phaseLine()).toBe(`forward ${formatMs(0.42 * scale.timeFactor)} \u00b7 backward ${formatMs(0.81 * scale.timeFactor)}`);
    expect(view.q("breakdown-time").querySelector(".sk-breakdown-total").textContent).toBe(formatMs(predictor.predictIterationMs(batch)));
  });
});
