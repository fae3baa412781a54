// The JS models must answer exactly what skyline_nb/models/linear.py answers: the shared
// fixture tests/fixtures/models_cases.json holds Python's results (make_models_cases.py).
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { NoModelError, Predictor, pyRound } from "../src/predict.js";
import { fixturePath, loadReport } from "./helpers.js";

const { cases } = JSON.parse(readFileSync(fixturePath("models_cases.json"), "utf8"));
const decode = (v) => (v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v);

function answer(call) {
  try {
    return call();
  } catch (err) {
    if (err instanceof NoModelError) return null;
    throw err;
  }
}

function close(actual, expected) {
  expected = decode(expected);
  if (expected === null || !Number.isFinite(expected)) return expect(actual).toBe(expected);
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(expected)));
}

describe("pyRound mirrors Python's round (ties to even)", () => {
  test.each([[0.5, 0], [1.5, 2], [2.5, 2], [3.5, 4], [2.4999, 2], [2.5001, 3], [7, 7], [1e15 + 0.5, 1e15]])(
    "round(%s) == %s", (x, y) => expect(pyRound(x)).toBe(y));
});

test("the shared fixture has the awkward cases", () => {
  expect(cases.length).toBeGreaterThanOrEqual(8);
});

describe.each(cases.map((c) => [c.name, c]))("case %s agrees with Python", (_, c) => {
  const p = new Predictor(c.models);
  const e = c.expected;
  const floats = ["predict_iteration_ms", "predict_throughput", "predict_peak_bytes"];
  const methods = {
    predict_iteration_ms: (x) => p.predictIterationMs(x),
    predict_throughput: (x) => p.predictThroughput(x),
    predict_peak_bytes: (x) => p.predictPeakBytes(x),
    batch_size_for_throughput: (x) => p.batchSizeForThroughput(x),
    batch_size_for_memory: (x) => p.batchSizeForMemory(x),
  };
  for (const [name, call] of Object.entries(methods)) {
    test(name, () => {
      for (const [input, expected] of e[name] || []) {
        const got = answer(() => call(decode(input)));
        if (floats.includes(name)) close(got, expected);
        else expect([input, got]).toEqual([input, expected]); // integers: exact
      }
    });
  }
  test("max_batch_size, knee, max_throughput", () => {
    expect(answer(() => p.maxBatchSize())).toBe(e.max_batch_size);
    expect(p.kneeBatchSize).toBe(e.knee_batch_size);
    close(p.maxThroughput, e.max_throughput);
    expect(p.canManipulate).toBe(e.can_manipulate);
  });
});

describe("reports", () => {
  test("knee and max batch recomputed in JS equal what Python stored in the report", () => {
    for (const name of ["small", "large"]) {
      const { models } = loadReport(name);
      const p = new Predictor(models);
      expect(p.kneeBatchSize).toBe(models.knee_batch_size);
      expect(p.maxBatchSize()).toBe(models.max_batch_size);
      close(p.maxThroughput, models.max_throughput);
    }
  });

  test("no models: predictions refuse, with a reason", () => {
    const p = new Predictor(null);
    expect(p.canManipulate).toBe(false);
    expect(p.reason).toMatch(/no performance models/);
    expect(() => p.predictThroughput(8)).toThrow(NoModelError);
  });

  test("inverse maps are monotone over the draggable range", () => {
    const p = new Predictor(loadReport("large").models);
    const lo = p.predictThroughput(1);
    const hi = p.predictThroughput(p.maxBatchSize());
    let last = 0;
    for (let i = 0; i <= 200; i++) {
      const b = p.batchSizeForThroughput(lo + ((hi - lo) * i) / 200);
      expect(b).toBeGreaterThanOrEqual(last);
      last = b;
    }
    expect(last).toBe(p.maxBatchSize());
  });
});
