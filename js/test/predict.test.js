// The JS models must answer exactly what skyline_nb/models/linear.py answers: the shared
// fixture tests/fixtures/models_cases.json holds Python's results (make_models_cases.py).
// Every entry of every case is checked, and the count is compared with the fixture, so a key
// or a case the test does not know fails instead of being skipped.
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, test } from "vitest";
import { MAX_BATCH_SIZE, NoModelError, Predictor, pyRound } from "../src/predict.js";
import { fixturePath, loadReport } from "./helpers.js";

const { cases } = JSON.parse(readFileSync(fixturePath("models_cases.json"), "utf8"));
// JSON cannot hold non-finite numbers; make_models_cases.py writes them as strings.
const SPECIAL = { Infinity, "-Infinity": -Infinity, NaN };
const decode = (v) => (typeof v === "string" && v in SPECIAL ? SPECIAL[v] : v);

/** What Python's _answer records: the value, or null where Python raised (no fitted line). */
function answer(call) {
  try {
    return call();
  } catch (err) {
    if (err instanceof NoModelError) return null;
    throw err;
  }
}

/** Floats: within 1e-9 relative (0 must be 0); null, NaN and ±Infinity must be identical. */
function close(actual, expected, where) {
  expected = decode(expected);
  if (expected === null || !Number.isFinite(expected)) {
    expect(actual, where).toBe(expected);
    return;
  }
  expect(typeof actual, where).toBe("number");
  expect(Math.abs(actual - expected), `${where}: ${actual} vs ${expected}`)
    .toBeLessThanOrEqual(1e-9 * Math.abs(expected));
}

/** Batch sizes (and null): exactly equal, reported with the input that gave them. */
function exact(actual, expected, where) {
  expect([where, actual]).toEqual([where, decode(expected)]);
}

const TABLES = {
  predict_iteration_ms: [(p, x) => p.predictIterationMs(x), close],
  predict_throughput: [(p, x) => p.predictThroughput(x), close],
  predict_peak_bytes: [(p, x) => p.predictPeakBytes(x), close],
  batch_size_for_throughput: [(p, t) => p.batchSizeForThroughput(t), exact],
  batch_size_for_memory: [(p, m) => p.batchSizeForMemory(m), exact],
};
const SCALARS = {
  max_batch_size: [(p) => answer(() => p.maxBatchSize()), exact],
  knee_batch_size: [(p) => p.kneeBatchSize, exact],
  max_throughput: [(p) => p.maxThroughput, close],
  can_manipulate: [(p) => p.canManipulate, exact],
};

/** Check every expected entry of one case; returns how many were checked. */
function checkCase(p, expected, label) {
  let checked = 0;
  for (const [key, value] of Object.entries(expected)) {
    if (key in TABLES) {
      const [call, compare] = TABLES[key];
      expect(value.length, `${label} ${key} has entries`).toBeGreaterThan(0);
      for (const [input, want] of value) {
        compare(answer(() => call(p, decode(input))), want, `${label} ${key}(${input})`);
        checked += 1;
      }
    } else if (key in SCALARS) {
      const [get, compare] = SCALARS[key];
      compare(get(p), value, `${label} ${key}`);
      checked += 1;
    } else {
      throw new Error(`${label}: the fixture has "${key}", which this test does not check`);
    }
  }
  return checked;
}

const entries = (e) =>
  Object.values(e).reduce((n, v) => n + (Array.isArray(v) ? v.length : 1), 0);
const total = cases.reduce((n, c) => n + entries(c.expected), 0);
let checked = 0;

describe("pyRound mirrors Python's round (ties to even)", () => {
  test.each([[0.5, 0], [1.5, 2], [2.5, 2], [3.5, 4], [2.4999, 2], [2.5001, 3], [7, 7], [1e15 + 0.5, 1e15],
    [2147483646.5, 2147483646], [2147483645.5, 2147483646], [-2.5, -2], [-3.5, -4]])(
    "round(%s) == %s", (x, y) => expect(pyRound(x)).toBe(y));
});

test("the shared fixture has the awkward cases", () => {
  const names = new Set(cases.map((c) => c.name));
  for (const name of ["exact", "negative_time_intercept", "zero_time_intercept", "flat_memory",
    "decreasing_memory", "zero_capacity", "capacity_at_cap", "exact_halves", "too_few_points"]) {
    expect(names.has(name), name).toBe(true);
  }
  expect(names.size).toBe(cases.length); // names label the tests below: keep them unique
});

// Each case twice: as stored (to_dict's max_batch_size and knee), and with those derived
// values removed, so the JS formulas themselves are checked against Python too.
describe.each(cases.map((c) => [c.name, c]))("case %s agrees with Python", (name, c) => {
  test("with the stored max_batch_size and knee", () => {
    checked += checkCase(new Predictor(c.models), c.expected, `${name} (stored)`);
  });
  test("recomputing max_batch_size and the knee", () => {
    const { max_batch_size: _m, knee_batch_size: _k, ...bare } = c.models;
    const p = new Predictor(bare);
    expect(p.storedMaxBatchSize).toBe(null);
    checked += checkCase(p, c.expected, `${name} (recomputed)`);
    expect(p.knee()).toBe(c.expected.knee_batch_size);
  });
});

afterAll(() => {
  // Runs after every test of the file; a filtered run (-t) checks fewer and is not a failure.
  const filtered = process.argv.some((a) => a === "-t" || a.startsWith("--testNamePattern"));
  if (!filtered && checked !== 2 * total) {
    throw new Error(`checked ${checked} fixture entries, expected ${2 * total}: a case was skipped`);
  }
});

describe("reports", () => {
  test("knee and max batch recomputed in JS equal what Python stored in the report", () => {
    for (const name of ["small", "large"]) {
      const { models } = loadReport(name);
      const { max_batch_size: maxBatch, knee_batch_size: knee, ...bare } = models;
      const p = new Predictor(bare);
      expect(p.kneeBatchSize).toBe(knee);
      expect(p.maxBatchSize()).toBe(maxBatch);
      close(p.maxThroughput, models.max_throughput, name);
      expect(new Predictor(models).maxBatchSize()).toBe(maxBatch);
    }
  });

  test("no models: predictions refuse, with a reason", () => {
    const p = new Predictor(null);
    expect(p.canManipulate).toBe(false);
    expect(p.reason).toMatch(/no performance models/);
    expect(() => p.predictThroughput(8)).toThrow(NoModelError);
    expect(() => p.maxBatchSize()).toThrow(NoModelError);
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

describe("what JS adds to Python's from_dict", () => {
  const base = cases.find((c) => c.name === "exact").models;

  test("a stored flag without a usable inverse does not enable dragging", () => {
    // from_samples never writes these; an edited or older report might.
    for (const change of [{ capacity_bytes: 0 }, { memory: { ...base.memory, slope: 0 } },
      { time: { ...base.time, slope: -1 } }, { time: null }]) {
      expect(new Predictor({ ...base, ...change, can_manipulate: true }).canManipulate).toBe(false);
    }
    expect(new Predictor(base).canManipulate).toBe(true);
  });

  test("a stored max_batch_size Python could not have written is recomputed", () => {
    for (const bad of [0, -3, 1.5, MAX_BATCH_SIZE + 1, "12", null]) {
      expect(new Predictor({ ...base, max_batch_size: bad }).maxBatchSize()).toBe(base.max_batch_size);
    }
  });
});
