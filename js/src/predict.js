// The performance models in JavaScript: a line-for-line mirror of
// skyline_nb/models/linear.py (PerformanceModels). The report stores only the fitted
// coefficients; the widget predicts from them while the user drags, so dragging works in saved
// notebooks and the offline page without a kernel. Keep the formulas, the order of floating
// point operations and the rounding identical to Python: js/test/predict.test.js compares the
// two on shared cases.

/**
 * Python's round(): ties go to the even neighbour (round(2.5) == 2), unlike Math.round.
 * x - Math.floor(x) is exact for doubles, so the tie test is exact too.
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

/** x with line(x) = y; ±Infinity or NaN when the slope is zero (callers clamp). */
function inverse(fit, y) {
  if (fit.slope === 0) return y === fit.intercept ? NaN : (y - fit.intercept > 0 ? Infinity : -Infinity);
  return (y - fit.intercept) / fit.slope;
}

export const KNEE_GAIN = 0.05; // XSP's rule: doubling the batch buys less than 5 % more throughput
export const MAX_BATCH_SIZE = 2 ** 31 - 1;

/** Predictions from report.models (PerformanceModels.to_dict()); null/undefined means none. */
export class Predictor {
  constructor(models) {
    const m = models || {};
    this.time = m.time || null;
    this.memory = m.memory || null;
    this.capacityBytes = Number(m.capacity_bytes) || 0;
    this.canManipulate = Boolean(m.can_manipulate && this.time && this.memory);
    this.reason = m.reason || (models ? null : "this report has no performance models");
    this.kneeBatchSize = this.knee();
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
   * Invert 1000·x / (a·x + b) = t, i.e. x = t·b / (1000 − t·a). Without a positive finite
   * solution the nearer end (1 or maxBatchSize(), 1 on a tie) wins.
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

  /** The largest batch whose predicted peak fits the capacity: floor((capacity − d) / c). */
  maxBatchSize() {
    const memory = need(this.memory);
    if (memory.slope <= 0 || this.capacityBytes <= 0) return 1;
    const x = inverse(memory, this.capacityBytes);
    if (!(x < MAX_BATCH_SIZE)) return MAX_BATCH_SIZE; // also catches NaN
    return x >= 1 ? Math.floor(x) : 1;
  }

  /** Round like Python (ties to even) and clamp to [1, maxBatchSize()]; NaN gives 1. */
  clamp(x) {
    if (Number.isNaN(x) || x < 1) return 1;
    const top = this.maxBatchSize();
    if (x >= top) return top;
    return Math.max(1, Math.min(pyRound(x), top));
  }

  /**
   * Smallest x with throughput(2x) < (1 + g)·throughput(x), within capacity; closed form
   * x > b·(1 − g) / (2·g·a). Null without an asymptote or beyond the largest batch that fits.
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
