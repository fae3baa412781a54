// The performance models in JavaScript: a line-for-line mirror of
// skyline_nb/models/linear.py (PerformanceModels). The report stores only the fitted
// coefficients; the widget predicts from them while the user drags, so dragging works in saved
// notebooks and the offline page without a kernel. Keep the formulas, the order of floating
// point operations and the messages identical to Python: js/test/predict.test.js compares the
// two on every case of tests/fixtures/models_cases.json (make_models_cases.py writes it).
// Python alone judges the samples (models/trust.py); what it decided arrives as can_manipulate
// and reason. Both sides re-check the lines themselves (lineProblems), so an edited or older
// report cannot offer a drag its lines cannot support.

export class NoModelError extends Error {}

function need(fit) {
  if (!fit) throw new NoModelError("no fitted model: predictions are off for this report");
  return fit;
}

const line = (fit, x) => fit.slope * x + fit.intercept;

export const KNEE_GAIN = 0.05; // XSP's rule: doubling the batch buys less than 5 % more throughput
export const EXTRAPOLATION_LIMIT = 8; // the drag reaches at most 8× the largest measured batch
// Python's cap: batch sizes stay exact integers, and a near-zero memory slope cannot turn the
// largest batch into 10^300.
export const MAX_BATCH_SIZE = 2 ** 31 - 1;
export const OLD_REPORT = "this report was written before the drag range was bounded; profile again to drag";

const isBatchSize = (v) => Number.isInteger(v) && v >= 1 && v <= MAX_BATCH_SIZE;

/** [lo, hi] as Python's from_dict reads it (int() truncates), or null when absent or unusable. */
function rangeOf(value) {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [lo, hi] = value.map((v) => Math.trunc(Number(v)));
  return Number.isFinite(lo) && Number.isFinite(hi) ? [lo, hi] : null;
}

/** Predictions from report.models (PerformanceModels.to_dict()); null/undefined means none. */
export class Predictor {
  constructor(models) {
    const m = models || {};
    this.time = m.time || null;
    this.memory = m.memory || null;
    // Python's from_dict applies int(): truncate, so a float capacity inverts the same way.
    const capacity = Math.trunc(Number(m.capacity_bytes));
    this.capacityBytes = Number.isFinite(capacity) ? capacity : 0;
    this.memoryBound = "memory_bound" in m ? Boolean(m.memory_bound) : true;
    this.measuredRange = rangeOf(m.measured_range);
    const best = Number(m.measured_max_throughput);
    this.measuredMaxThroughput = m.measured_max_throughput !== null && Number.isFinite(best) ? best : null;
    // to_dict writes max_batch_size (derived); reading it means JS cannot drift from Python's
    // floor even by one ulp. Reports without it (or with a value Python could not have
    // written) get the same formula recomputed.
    this.storedMaxBatchSize = isBatchSize(m.max_batch_size) ? m.max_batch_size : null;
    // Python's __post_init__: a claimed drag whose lines cannot support it is turned off.
    const problems = models ? this.lineProblems() : [];
    const claimed = Boolean(m.can_manipulate);
    this.canManipulate = claimed && problems.length === 0;
    this.reason = models ? m.reason || (claimed && problems.length ? problems.join("; ") : null)
      : "this report has no performance models";
    // Python's from_dict keeps the stored knee (null included) rather than recomputing it.
    const knee = m.knee_batch_size;
    this.kneeBatchSize = "knee_batch_size" in m && (knee === null || isBatchSize(knee)) ? knee : this.knee();
  }

  /** Why these lines cannot support a drag (PerformanceModels.line_problems, same words). */
  lineProblems() {
    if (!this.time || !this.memory) return ["this report has no fitted lines"];
    if (this.measuredRange === null) return [OLD_REPORT];
    const problems = [];
    if (this.time.slope <= 0) problems.push("iteration time does not grow with the batch size");
    else if (this.time.intercept < 0) problems.push("the time line has a negative fixed cost per iteration");
    if (this.memory.slope <= 0) problems.push("peak memory does not grow with the batch size");
    else if (line(this.memory, 1) <= 0) problems.push("the memory line predicts no memory at batch size 1");
    if (this.memoryBound && this.capacityBytes <= 0) problems.push("the device's memory capacity is unknown");
    const largest = this.measuredRange[1];
    if (!problems.length && this.maxBatchSize() < largest) {
      problems.push(`the memory line puts the measured batch size ${largest} beyond the memory capacity`);
    }
    return problems;
  }

  predictIterationMs(batchSize) {
    return line(need(this.time), batchSize);
  }

  /** Samples per second at batchSize; Infinity where the line predicts no time at all. */
  predictThroughput(batchSize) {
    const ms = this.predictIterationMs(batchSize);
    return ms > 0 ? (1000.0 * batchSize) / ms : Infinity;
  }

  predictPeakBytes(batchSize) {
    return line(need(this.memory), batchSize);
  }

  /**
   * The most the user can get within the drag range, predicted (at an end: the throughput is
   * monotone) or measured; never the asymptote 1000/a. Null while dragging is off.
   */
  get maxThroughput() {
    if (!this.canManipulate || !this.time) return null;
    const top = this.maxBatchSize();
    const value = Math.max(this.predictThroughput(1), this.predictThroughput(top), this.measuredMaxThroughput || 0.0);
    return Number.isFinite(value) ? value : null;
  }

  /**
   * The top of the drag range, in [1, MAX_BATCH_SIZE]: the smaller of the largest batch whose
   * predicted peak fits the capacity (only when memory bounds it) and 8× the largest measured
   * batch. Throws like Python without a memory line, even when a value was stored.
   */
  maxBatchSize() {
    const memory = need(this.memory);
    if (this.storedMaxBatchSize !== null) return this.storedMaxBatchSize;
    const limits = [MAX_BATCH_SIZE];
    if (this.memoryBound) limits.push(this.capacityLimit(memory));
    if (this.measuredRange !== null) limits.push(EXTRAPOLATION_LIMIT * this.measuredRange[1]);
    return Math.max(1, Math.min(...limits));
  }

  capacityLimit(memory) {
    if (memory.slope <= 0 || this.capacityBytes <= 0) return 1;
    const x = (this.capacityBytes - memory.intercept) / memory.slope;
    if (!(x < MAX_BATCH_SIZE)) return MAX_BATCH_SIZE; // also catches NaN and Infinity
    return x >= 1 ? Math.floor(x) : 1;
  }

  /** Words for a batch size outside the measured ones (the line is extrapolated), else null. */
  extrapolation(batchSize) {
    if (this.measuredRange === null) return null;
    const [lo, hi] = this.measuredRange;
    if (batchSize > hi) return `extrapolated beyond the measured ${hi}`;
    if (batchSize < lo) return `extrapolated below the measured ${lo}`;
    return null;
  }

  /**
   * Smallest x with throughput(2x) < (1 + g)·throughput(x), within the drag range; closed form
   * x > b·(1 − g) / (2·g·a), divided in Python's order so that it cannot underflow. Null
   * without an asymptote or beyond the range (or the cap); 1 when b ≤ 0.
   */
  knee() {
    const fit = this.time;
    if (!fit || fit.slope <= 0) return null;
    if (fit.intercept <= 0) return 1;
    const bound = (fit.intercept * (1 - KNEE_GAIN)) / (2 * KNEE_GAIN) / fit.slope;
    if (!(bound < MAX_BATCH_SIZE)) return null;
    const knee = Math.floor(bound) + 1;
    if (this.memory && knee > this.maxBatchSize()) return null;
    return knee;
  }
}
