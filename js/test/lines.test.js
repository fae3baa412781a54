import { describe, expect, test } from "vitest";
import { lineKey, lineStats, mostAtOnce } from "../src/lines.js";

// A gradient-accumulation step's tree: the line `loss = loss_fn(model(xb), yb)` runs its two ops
// once per micro-batch; each micro-batch's saved bytes are freed by its backward before the
// next one saves (spans on the memory run's clock, as the profiler writes them).
const FILE = "cell-1";
const frames = [{ file: FILE, line: 19 }];
const op = (path, bytes, span) => ({ path, name: "addmm", kind: "op", forward_ms: 1, backward_ms: 1, activation_bytes: bytes, frames, ...(span ? { saved_span: span } : {}) });
const tree = (ops) => ({ path: "", name: "MLP", kind: "module", forward_ms: 0, children: [{ path: "fc", name: "Linear", kind: "module", forward_ms: 0, children: ops }] });
const line19 = (ops) => lineStats(tree(ops), [], true).get(lineKey(FILE, 19));

describe("a line's saved bytes", () => {
  test("the most alive at once: one micro-batch's, not the sum of four", () => {
    const runs = [0, 1, 2, 3].flatMap((k) => [op(`fc/addmm#${2 * k}`, 32768, [8 * k + 1, 8 * k + 8]), op(`fc/addmm#${2 * k + 1}`, 640, [8 * k + 2, 8 * k + 7])]);
    const stat = line19(runs);
    expect(stat.activationBytes).toBe(32768 + 640);
    expect(stat.timeMs).toBe(16); // time still adds up over the runs
  });

  test("overlapping spans add up; one alive at the end (null) stays to the end", () => {
    expect(line19([op("fc/addmm#0", 100, [1, 10]), op("fc/addmm#1", 50, [5, 6]), op("fc/addmm#2", 7, [11, null])]).activationBytes).toBe(150);
    expect(line19([op("fc/addmm#0", 100, [1, null]), op("fc/addmm#1", 50, [20, 30])]).activationBytes).toBe(150);
  });

  test("without spans (an older report) they count as alive throughout: the sum", () => {
    // one without a span counts throughout, beside the most of the others at once
    expect(line19([op("fc/addmm#0", 100), op("fc/addmm#1", 50, [1, 2]), op("fc/addmm#2", 25, [3, 4])]).activationBytes).toBe(150);
    expect(line19([op("fc/addmm#0", 100), op("fc/addmm#1", 50)]).activationBytes).toBe(150);
  });

  test("mostAtOnce: a free at the tick another save starts does not overlap it", () => {
    expect(mostAtOnce([])).toBe(0);
    expect(mostAtOnce([[1, 5, 10], [5, 9, 20]])).toBe(20);
    expect(mostAtOnce([[1, 6, 10], [5, 9, 20]])).toBe(30);
    expect(mostAtOnce([[-Infinity, Infinity, 3], [-Infinity, Infinity, 4], [2, 3, 5]])).toBe(12);
  });
});
