// The performance models in JavaScript: a line-for-line mirror of
// skyline_nb/models/linear.py (PerformanceModels). The report stores only the fitted
// coefficients; the widget predicts from them while the user drags, so dragging works in saved
// notebooks and the offline page without a kernel. Keep the formulas, the order of floating
// point operations and the rounding identical to Python: js/test/predict.test.js compares the
// two on every case of tests/fixtures/models_cases.json (make_models_cases.py writes it).

/**
 * Python's round(): ties go to the even neighbour (round(2.5) == 2), unlike Math.round, which
 * would put a dragged bar one batch off Python's answer at every exact half.
 * x - Math.floor(x) is exact for doubles, so the tie test is exact too. Only finite x reach
 * here (clamp filters NaN and ±Infinity first, as Python would raise on them).
 */
export function pyRound(x) {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export class NoModelError extends Error {}

function need(fit) {
  if (!fit) throw new NoModelError("no fitted model: predictions are off for this report");
  return fit;
}

const line = (fit, x) => fit.slope * x + fit.intercept;

/**
 * x with line(x) = y; ±Infinity or NaN when the slope is zero (callers clamp). Python uses
 * copysign(inf, y − b); the two differ only for y = NaN with a zero slope, which no caller
 * reaches (both guard slope ≤ 0 before inverting).
 */
function inverse(fit, y) {
  if (fit.slope === 0) return y === fit.intercept ? NaN : (y - fit.intercept > 0 ? Infinity : -Infinity);
  return (y - fit.intercept) / fit.slope;
}

export const KNEE_GAIN = 0.05; // XSP's rule: doubling the batch buys less than 5 % more throughput
// Python's cap: batch sizes stay exact integers, and a near-zero memory slope cannot turn the
// largest batch into 10^300.
export const MAX_BATCH_SIZE = 2 ** 31 - 1;

const isBatchSize = (v) => Number.isInteger(v) && v >= 1 && v <= MAX_BATCH_SIZE;

/** Predictions from report.models (PerformanceModels.to_dict()); null/undefined means none. */
export class Predictor {
  constructor(models) {
    const m = models || {};
    this.time = m.time || null;
    this.memory = m.memory || null;
    // Python's from_dict applies int(): truncate, so a float capacity inverts the same way.
    const capacity = Math.trunc(Number(m.capacity_bytes));
    this.capacityBytes = Number.isFinite(capacity) ? capacity : 0;
    // The stored flag is from_samples' verdict, which already requires both slopes and the
    // capacity to be positive; re-checking keeps a hand-edited or older report (written before
    // that rule) from offering drags that have no inverse (every answer would be batch 1).
    this.canManipulate = Boolean(
      m.can_manipulate && this.time && this.memory &&
      this.time.slope > 0 && this.memory.slope > 0 && this.capacityBytes > 0);
    this.reason = m.reason || (models ? null : "this report has no performance models");
    // to_dict writes max_batch_size (derived); reading it means JS cannot drift from Python's
    // floor even by one ulp. Reports without it (or with a value Python could not have
    // written) get the same formula recomputed.
    this.storedMaxBatchSize = isBatchSize(m.max_batch_size) ? m.max_batch_size : null;
    // Python's from_dict keeps the stored knee (null included) rather than recomputing it.
    const knee = m.knee_batch_size;
    this.kneeBatchSize = "knee_batch_size" in m && (knee === null || isBatchSize(knee)) ? knee : this.knee();
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

  /** The asymptote of x / R(x): 1000 / a samples/s (null unless a > 0 and it is finite). */
  get maxThroughput() {
    if (!this.time || this.time.slope <= 0) return null;
    const value = 1000.0 / this.time.slope;
    return Number.isFinite(value) ? value : null;
  }

  /**
   * Invert 1000·x / (a·x + b) = t, i.e. x = t·b / (1000 − t·a), in [1, maxBatchSize()].
   * Only a finite x > 0 with a positive predicted time is a real solution: t at or beyond the
   * asymptote, t ≤ 0, NaN, or a negative intercept give none. Then the end (1 or
   * maxBatchSize()) whose throughput is nearer t wins, 1 on a tie (NaN gaps tie), since the
   * throughput is monotone in x between them.
   */
  batchSizeForThroughput(samplesPerS) {
    const fit = need(this.time);
    const denominator = 1000.0 - samplesPerS * fit.slope;
    const x = denominator !== 0 ? (samplesPerS * fit.intercept) / denominator : NaN;
    if (Number.isFinite(x) && x > 0 && line(fit, x) > 0) return this.clamp(x);
    const top = this.maxBatchSize();
    const lowGap = Math.abs(this.predictThroughput(1) - samplesPerS);
    const highGap = Math.abs(this.predictThroughput(top) - samplesPerS);
    return highGap < lowGap ? top : 1;
  }

  /** Rounded inverse of the memory line in [1, maxBatchSize()]; 1 when it does not grow. */
  batchSizeForMemory(peakBytes) {
    const memory = need(this.memory);
    if (memory.slope <= 0) return 1;
    return this.clamp(inverse(memory, peakBytes));
  }

  /**
   * The largest batch whose predicted peak fits the capacity: floor((capacity − d) / c), in
   * [1, MAX_BATCH_SIZE]; 1 when memory does not grow or the capacity is unknown. Throws like
   * Python without a memory line, even when a value was stored.
   */
  maxBatchSize() {
    const memory = need(this.memory);
    if (this.storedMaxBatchSize !== null) return this.storedMaxBatchSize;
    if (memory.slope <= 0 || this.capacityBytes <= 0) return 1;
    const x = inverse(memory, this.capacityBytes);
    if (!(x < MAX_BATCH_SIZE)) return MAX_BATCH_SIZE; // also catches NaN and Infinity
    return x >= 1 ? Math.floor(x) : 1;
  }

  /**
   * Round like Python (ties to even) and clamp to [1, maxBatchSize()]. NaN and −Infinity give
   * 1 (x < 1 is true for −Infinity); +Infinity gives the top, before pyRound sees it.
   */
  clamp(x) {
    if (Number.isNaN(x) || x < 1) return 1;
    const top = this.maxBatchSize();
    if (x >= top) return top;
    return Math.max(1, Math.min(pyRound(x), top));
  }

  /**
   * Smallest x with throughput(2x) < (1 + g)·throughput(x), within capacity; closed form
   * x > b·(1 − g) / (2·g·a), divided in Python's order so that it cannot underflow. Null
   * without an asymptote or beyond the largest batch that fits (or the cap); 1 when b ≤ 0.
   */
  knee() {
    const fit = this.time;
    if (!fit || fit.slope <= 0) return null;
    if (fit.intercept <= 0) return 1;
    const bound = (fit.intercept * (1 - KNEE_GAIN)) / (2 * KNEE_GAIN) / fit.slope;
    if (!(bound < MAX_BATCH_SIZE)) return null;
    const knee = Math.floor(bound) + 1;
    if (this.memory && this.memory.slope > 0 && this.capacityBytes > 0 && knee > this.maxBatchSize()) return null;
    return knee;
  }
}
