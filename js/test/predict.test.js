// The JS models must answer exactly what skyline_nb/models/performance.py answers: the shared
// fixture tests/fixtures/models_cases.json holds Python's results (make_models_cases.py).
// Every entry of every case is checked, and the count is compared with the fixture, so a key
// or a case the test does not know fails instead of being skipped.
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, test } from "vitest";
import { EXTRAPOLATION_LIMIT, MAX_BATCH_SIZE, NoModelError, OLD_REPORT, Predictor } from "../src/predict.js";
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
  peak_phase_at: [(p, x) => p.peakPhaseAt(x), exact],
  peak_phases_at: [(p, x) => p.peakPhasesAt(x), exact],
};
const SCALARS = {
  max_batch_size: [(p) => answer(() => p.maxBatchSize()), exact],
  min_batch_size: [(p) => p.minBatchSize(), exact],
  knee_batch_size: [(p) => p.kneeBatchSize, exact],
  max_throughput: [(p) => p.maxThroughput, close],
  max_throughput_batch_size: [(p) => p.maxThroughputBatchSize, close],
  can_manipulate: [(p) => p.canManipulate, exact],
  line_problems: [(p) => p.lineProblems(), exact],
  bend_batch_size: [(p) => p.bendBatchSize, close],
  launch_bound_up_to: [(p) => p.launchBoundUpTo, exact],
  asymptotic_throughput: [(p) => p.asymptoticThroughput, close],
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
  Object.entries(e).reduce((n, [key, v]) => n + (key in TABLES ? v.length : 1), 0);
const total = cases.reduce((n, c) => n + entries(c.expected), 0);
let checked = 0;

test("the shared fixture has the awkward cases", () => {
  const names = new Set(cases.map((c) => c.name));
  for (const name of ["exact", "negative_time_intercept", "zero_time_intercept", "flat_memory",
    "decreasing_memory", "zero_capacity", "capacity_at_cap", "exact_halves", "too_few_points",
    "cpu_without_budget", "through_origin", "far_sample", "before_the_bounded_range",
    "flat_time", "bend_time", "convex_cpu", "memory_hinge"]) {
    expect(names.has(name), name).toBe(true);
  }
  expect(names.size).toBe(cases.length); // names label the tests below: keep them unique
});

// Each case three times: as stored (to_dict's derived values), with the derived values removed
// (so the JS formulas themselves are checked), and claiming a drag with no reason (so the line
// problems decide, as Python's __post_init__ does for an edited report).
describe.each(cases.map((c) => [c.name, c]))("case %s agrees with Python", (name, c) => {
  test("with the stored max_batch_size and knee", () => {
    checked += checkCase(new Predictor(c.models), c.expected, `${name} (stored)`);
  });
  test("recomputing max_batch_size, max_throughput and the knee", () => {
    const { max_batch_size: _m, knee_batch_size: _k, max_throughput: _t, ...bare } = c.models;
    const p = new Predictor(bare);
    expect(p.storedMaxBatchSize).toBe(null);
    checked += checkCase(p, c.expected, `${name} (recomputed)`);
    expect(p.knee()).toBe(c.expected.knee_batch_size);
  });
  test("claiming a drag: only lines without problems may", () => {
    const p = new Predictor({ ...c.models, can_manipulate: true, reason: null });
    const problems = c.expected.line_problems;
    expect(p.canManipulate).toBe(problems.length === 0);
    expect(p.reason).toBe(problems.length ? problems.join("; ") : null);
  });
});

// A report from before curves stored one line per model (slope and intercept, no "lines"):
// every one-line case must read the same without its "lines" and "shape".
describe.each(cases.filter((c) => c.models.time?.lines?.length === 1 && c.models.memory?.lines?.length === 1)
  .map((c) => [c.name, c]))("case %s read as a one-line report", (name, c) => {
  test("answers as the curve did", () => {
    const strip = ({ lines: _l, shape: _s, ...rest }) => rest;
    const p = new Predictor({ ...c.models, time: strip(c.models.time), memory: strip(c.models.memory) });
    expect(p.maxBatchSize()).toBe(new Predictor(c.models).maxBatchSize());
    expect(p.lineProblems()).toEqual(c.expected.line_problems);
    for (const [input, want] of c.expected.predict_iteration_ms) close(answer(() => p.predictIterationMs(decode(input))), want, `${name} T(${input})`);
    for (const [input, want] of c.expected.predict_peak_bytes) close(answer(() => p.predictPeakBytes(decode(input))), want, `${name} M(${input})`);
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
  test("what JS recomputes equals what Python stored in the report", () => {
    for (const name of ["small", "large", "cnn"]) {
      const { models } = loadReport(name);
      const { max_batch_size: maxBatch, knee_batch_size: knee, max_throughput: best, ...bare } = models;
      const p = new Predictor(bare);
      expect(p.canManipulate).toBe(true);
      expect(p.kneeBatchSize).toBe(knee);
      expect(p.maxBatchSize()).toBe(maxBatch);
      close(p.maxThroughput, best, name);
      expect(new Predictor(models).maxBatchSize()).toBe(maxBatch);
    }
  });

  test("the drag range: the memory capacity when it bounds, else 8x the largest sample", () => {
    const small = new Predictor(loadReport("small").models); // CPU, no budget: RAM is no bound
    expect(small.memoryBound).toBe(false);
    expect(small.maxBatchSize()).toBe(EXTRAPOLATION_LIMIT * small.measuredRange[1]);
    const large = new Predictor(loadReport("large").models); // GPU memory
    expect(large.maxBatchSize()).toBeLessThan(EXTRAPOLATION_LIMIT * large.measuredRange[1]);
    expect(large.predictPeakBytes(large.maxBatchSize())).toBeLessThanOrEqual(large.capacityBytes);
    expect(large.predictPeakBytes(large.maxBatchSize() + 1)).toBeGreaterThan(large.capacityBytes);
  });

  test("no models: predictions refuse, with a reason", () => {
    const p = new Predictor(null);
    expect(p.canManipulate).toBe(false);
    expect(p.reason).toMatch(/no performance models/);
    expect(p.maxThroughput).toBe(null);
    expect(() => p.predictThroughput(8)).toThrow(NoModelError);
    expect(() => p.maxBatchSize()).toThrow(NoModelError);
  });

  test("predictions beyond or below the measured sizes are marked as extrapolated", () => {
    const p = new Predictor(loadReport("small").models);
    const [lo, hi] = p.measuredRange;
    expect(p.extrapolation(hi + 1)).toBe(`extrapolated beyond the measured ${hi}`);
    expect(p.extrapolation(lo - 1)).toBe(`extrapolated below the measured ${lo}`);
    expect(p.extrapolation(lo)).toBe(null);
    expect(p.extrapolation(hi)).toBe(null);
  });
});

describe("reports from before the bounded range", () => {
  const current = cases.find((c) => c.name === "exact").models;

  test("cannot drag, say why, and show no maximum throughput", () => {
    const { measured_range: _r, memory_bound: _b, measured_max_throughput: _t, ...old } = current;
    const p = new Predictor({ ...old, max_throughput: 2000 });
    expect(p.canManipulate).toBe(false);
    expect(p.reason).toBe(OLD_REPORT);
    expect(p.maxThroughput).toBe(null);
  });

  test("a missing memory_bound reads as a real bound, as in Python", () => {
    const { memory_bound: _b, ...bare } = current;
    expect(new Predictor(bare).memoryBound).toBe(true);
  });

  test("a stored max_batch_size Python could not have written is recomputed", () => {
    for (const bad of [0, -3, 1.5, MAX_BATCH_SIZE + 1, "12", null]) {
      expect(new Predictor({ ...current, max_batch_size: bad }).maxBatchSize()).toBe(current.max_batch_size);
    }
  });
});
