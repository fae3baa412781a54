// The performance models in JavaScript: a line-for-line mirror of
// skyline_nb/models/performance.py (PerformanceModels) and curve.py (Curve: the maximum of a
// few lines, e.g. flat then growing; a memory curve's lines each hold over a stretch of batch
// sizes, from/to, and so may a time curve's first piece). The report stores only the fitted
// lines; the widget predicts from them
// while the user drags, so dragging works in saved
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

const bound = (v) => (v === undefined || v === null ? null : Number(v));

/** A stored curve's lines in Curve's order; a curve from before curves is its one line. */
function linesOf(fit) {
  if (!fit) return null;
  const lines = Array.isArray(fit.lines) && fit.lines.length ? fit.lines : [fit];
  return lines.map((l) => ({
    slope: Number(l.slope),
    intercept: Number(l.intercept),
    phase: typeof l.phase === "string" ? l.phase : null,
    start: bound(l.from),
    end: bound(l.to),
  }));
}

/** Line.holds_at: whether the line holds at x (its stretch, ends included). */
const holdsAt = (l, x) => (l.start === null || l.start <= x) && (l.end === null || x <= l.end);

/** Curve._holding: the lines that hold at x (all of them if none does). */
function holding(lines, x) {
  const found = lines.filter((l) => holdsAt(l, x));
  return found.length ? found : lines;
}

/** Curve.pieces: whether some line holds over a stretch only. */
const hasPieces = (lines) => lines.some((l) => l.start !== null || l.end !== null);

const SHAPES = ["flat", "line", "bend", "convex"];

/** Curve.from_dict's shape: an older one-line curve is flat when its slope is 0. */
function shapeOf(fit) {
  if (!fit) return null;
  if (!("lines" in fit)) return Number(fit.slope) === 0 ? "flat" : "line";
  return SHAPES.includes(fit.shape) ? fit.shape : "line";
}

/** curve.py Curve.__call__: the largest of the lines that hold at x. */
const curveAt = (lines, x) => Math.max(...holding(lines, x).map((l) => line(l, x)));

/** Curve.breakpoints: where each line hands over to the next, steeper one. */
const breakpoints = (lines) =>
  lines.slice(1).map((b, i) => (lines[i].intercept - b.intercept) / (b.slope - lines[i].slope));

/** Curve.line_at: the line that is the curve at x (the steeper one at a breakpoint). */
function lineAt(lines, x) {
  const found = holding(lines, x);
  let best = found[0];
  for (const l of found.slice(1)) if (line(l, x) >= line(best, x)) best = l;
  return best;
}

/** Curve._inverse_of_pieces: inverse where lines hold over stretches (the curve never falls). */
function inverseOfPieces(lines, y) {
  const ends = [...new Set(lines.flatMap((l) => [l.start, l.end]).filter((v) => v !== null))].sort((a, b) => a - b);
  const last = ends[ends.length - 1];
  if (curveAt(lines, last) <= y && lines.filter((l) => l.end === null).every((l) => l.slope <= 0)) return Infinity;
  const candidates = [...ends];
  for (const l of lines) {
    if (l.slope > 0) {
      const x = (y - l.intercept) / l.slope;
      if (holdsAt(l, x)) candidates.push(x);
    }
  }
  // rounding: a line evaluated at its own crossing of y lands within ulps of its terms
  const slack = 1e-12 * Math.max(1.0, Math.abs(y), ...lines.map((l) => Math.abs(l.intercept)));
  const below = candidates.filter((x) => curveAt(lines, x) <= y + slack);
  return below.length ? Math.max(...below) : -Infinity;
}

/** Curve.inverse: the largest x with curve(x) <= y (callers clamp). */
function inverse(lines, y) {
  if (Number.isNaN(y)) return NaN;
  if (hasPieces(lines)) return inverseOfPieces(lines, y);
  if (lines.some((l) => l.slope <= 0 && l.intercept > y)) return -Infinity;
  const growing = lines.filter((l) => l.slope > 0).map((l) => (y - l.intercept) / l.slope);
  return growing.length ? Math.min(...growing) : Infinity;
}

export const KNEE_GAIN = 0.05; // XSP's rule: doubling the batch buys less than 5 % more throughput
// A knee whose range (knee.knee_spread) spans more than this ratio, or runs past the drag's
// end, is not drawn: "knee 1–209" places it nowhere a user can act on.
export const KNEE_SPAN = 4;
export const PHASE_TIE = 0.01; // phases whose predicted peaks lie this close are not told apart
export const EXTRAPOLATION_LIMIT = 8; // the drag reaches at most 8× the largest measured batch
export const FLAT_EXTRAPOLATION_LIMIT = 2; // ... and 2× it when the time did not grow
// Python's cap: batch sizes stay exact integers, and a near-zero memory slope cannot turn the
// largest batch into 10^300.
export const MAX_BATCH_SIZE = 2 ** 31 - 1;
export const OLD_REPORT = "this report was written before the drag range was bounded; profile again to drag";

const isBatchSize = (v) => Number.isInteger(v) && v >= 1 && v <= MAX_BATCH_SIZE;

/** knee.read_spread: [low, high], high null where a curve fitted with one size left out put the
 * knee past the drag's end; null where the report has none, or one that does not hold the knee. */
function kneeRange(value, knee) {
  if (!Array.isArray(value) || value.length !== 2 || knee === null) return null;
  const [low, high] = value;
  if (!isBatchSize(low) || !(high === null || isBatchSize(high))) return null;
  return low <= knee && (high === null || knee <= high) ? [low, high] : null;
}

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
    this.timeLines = linesOf(this.time);
    this.memoryLines = linesOf(this.memory);
    this.timeShape = shapeOf(this.time);
    // Python's from_dict applies int(): truncate, so a float capacity inverts the same way.
    const capacity = Math.trunc(Number(m.capacity_bytes));
    this.capacityBytes = Number.isFinite(capacity) ? capacity : 0;
    this.memoryBound = "memory_bound" in m ? Boolean(m.memory_bound) : true;
    this.measuredRange = rangeOf(m.measured_range);
    // The smallest size above the samples where the user's code raised: the drag stops below.
    this.failsAt = isBatchSize(m.fails_at) ? m.fails_at : null;
    // ... and the largest size below them where it raised: the drag starts above it.
    this.failsBelow = isBatchSize(m.fails_below) ? m.fails_below : null;
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
    // knee.knee_spread, computed where the samples are: how firmly they place the knee.
    this.kneeRange = kneeRange(m.knee_range, this.kneeBatchSize);
  }

  /** The knee where the samples place it within KNEE_SPAN (or where no range is known), else null. */
  get placedKnee() {
    const range = this.kneeRange;
    return range && (range[1] === null || range[1] > KNEE_SPAN * range[0]) ? null : this.kneeBatchSize;
  }

  /** Why these lines cannot support a drag (PerformanceModels.line_problems, same words). */
  lineProblems() {
    if (!this.time || !this.memory) return ["this report has no fitted lines"];
    if (this.measuredRange === null) return [OLD_REPORT];
    const problems = [];
    const time = this.timeLines;
    const memory = this.memoryLines;
    if (time.some((l) => l.slope < 0)) problems.push("iteration time does not grow with the batch size");
    else if (curveAt(time, 0) < 0) problems.push("the time line has a negative fixed cost per iteration");
    else if (curveAt(time, 1) <= 0) problems.push("the time curve predicts no time at batch size 1");
    if (memory[memory.length - 1].slope <= 0) problems.push("peak memory does not grow with the batch size");
    else if (curveAt(memory, 1) <= 0) problems.push("the memory line predicts no memory at batch size 1");
    if (this.memoryBound && this.capacityBytes <= 0) problems.push("the device's memory capacity is unknown");
    const largest = this.measuredRange[1];
    if (!problems.length && this.maxBatchSize() < largest) {
      problems.push(`the memory line puts the measured batch size ${largest} beyond the memory capacity`);
    }
    const smallest = this.measuredRange[0];
    if (this.minBatchSize() > smallest) {
      problems.push(`the measured batch size ${smallest} is below a size where the code raised (${this.failsBelow})`);
    }
    return problems;
  }

  predictIterationMs(batchSize) {
    need(this.time);
    return curveAt(this.timeLines, batchSize);
  }

  /** Samples per second at batchSize; Infinity where the line predicts no time at all. */
  predictThroughput(batchSize) {
    const ms = this.predictIterationMs(batchSize);
    return ms > 0 ? (1000.0 * batchSize) / ms : Infinity;
  }

  predictPeakBytes(batchSize) {
    need(this.memory);
    return curveAt(this.memoryLines, batchSize);
  }

  /** PerformanceModels.peak_phase_at: the phase whose memory line is the curve at batchSize. */
  peakPhaseAt(batchSize) {
    need(this.memory);
    return lineAt(this.memoryLines, batchSize).phase;
  }

  /**
   * PerformanceModels.peak_phases_at: peakPhaseAt first, then every other phase whose memory line
   * lies within `share` of the curve at batchSize (Curve.phases_near), the higher first.
   */
  peakPhasesAt(batchSize, share = PHASE_TIE) {
    need(this.memory);
    const top = lineAt(this.memoryLines, batchSize);
    const y = line(top, batchSize);
    const near = holding(this.memoryLines, batchSize)
      .filter((l) => l !== top && line(l, batchSize) >= y - share * Math.abs(y))
      .sort((a, b) => line(b, batchSize) - line(a, batchSize));
    return [...new Set([top, ...near].map((l) => l.phase).filter((p) => p !== null))];
  }

  /** The largest measured batch when the time did not grow up to it (launch-bound), else null. */
  get launchBoundUpTo() {
    return this.timeShape === "flat" && this.measuredRange ? this.measuredRange[1] : null;
  }

  /** Where a bent time curve stops being flat and starts to grow, else null. */
  get bendBatchSize() {
    return this.timeShape === "bend" ? breakpoints(this.timeLines)[0] : null;
  }

  /** 1000 / the steepest time slope: the throughput only an infinite batch reaches, else null. */
  get asymptoticThroughput() {
    if (!this.time) return null;
    const slope = this.timeLines[this.timeLines.length - 1].slope;
    if (slope <= 0) return null;
    const value = 1000.0 / slope;
    return Number.isFinite(value) ? value : null;
  }

  /** PerformanceModels.turns: the ends of [minBatchSize, top] and the breakpoints between. */
  turns(top) {
    need(this.time);
    const bottom = this.minBatchSize();
    return [bottom, ...breakpoints(this.timeLines).filter((x) => bottom < x && x < top), top];
  }

  /**
   * The most the user can get within the drag range, predicted (at an end or a breakpoint:
   * between them the throughput is monotone) or measured; never the asymptote. Null while
   * dragging is off.
   */
  get maxThroughput() {
    const best = this.bestTurn();
    if (best === null) return null;
    const value = Math.max(this.predictThroughput(best), this.measuredMaxThroughput || 0.0);
    return Number.isFinite(value) ? value : null;
  }

  /**
   * Where maxThroughput is predicted: the first end of the drag range or breakpoint with the
   * most throughput; null where a measured throughput is as large (a tie within rounding is
   * the sample's), or dragging is off.
   */
  get maxThroughputBatchSize() {
    const best = this.bestTurn();
    const measured = (this.measuredMaxThroughput || 0.0) * (1 + 1e-9);
    return best !== null && this.predictThroughput(best) > measured ? best : null;
  }

  /** PerformanceModels._best_turn: the first turn with the most throughput; null while off. */
  bestTurn() {
    if (!this.canManipulate || !this.time) return null;
    const turns = this.turns(this.maxBatchSize());
    return turns.reduce((a, x) => (this.predictThroughput(x) > this.predictThroughput(a) ? x : a));
  }

  /** The bottom of the drag range: 1, or the size above failsBelow. */
  minBatchSize() {
    return this.failsBelow === null ? 1 : this.failsBelow + 1;
  }

  /**
   * The top of the drag range, in [1, MAX_BATCH_SIZE]: the smallest of the largest batch whose
   * predicted peak fits the capacity (when memory bounds it; else a CPU's free RAM less its
   * heap, where the memory grows and the RAM is known, never below the samples, which ran),
   * 8× the largest measured batch and the size below
   * failsAt. Throws like Python without a memory line, even when a value was stored.
   */
  maxBatchSize() {
    need(this.memory);
    if (this.storedMaxBatchSize !== null) return this.storedMaxBatchSize;
    const limits = [MAX_BATCH_SIZE];
    const grows = this.memoryLines[this.memoryLines.length - 1].slope > 0;
    if (this.memoryBound || (grows && this.capacityBytes > 0)) {
      const limit = this.capacityLimit(); // a CPU's RAM, read after the samples: not below them
      const free = !this.memoryBound && this.measuredRange !== null;
      limits.push(free ? Math.max(limit, this.measuredRange[1]) : limit);
    }
    if (this.measuredRange !== null) {
      const reach = this.timeShape === "flat" ? FLAT_EXTRAPOLATION_LIMIT : EXTRAPOLATION_LIMIT;
      limits.push(reach * this.measuredRange[1]);
    }
    if (this.failsAt !== null) limits.push(this.failsAt - 1);
    return Math.max(1, Math.min(...limits));
  }

  capacityLimit() {
    const memory = this.memoryLines;
    if (memory[memory.length - 1].slope <= 0 || this.capacityBytes <= 0) return 1;
    const x = inverse(memory, this.capacityBytes);
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

  /** The size where the user's code raised next to batchSize, when batchSize is the end of the
   * range that it set (the largest below failsAt, the smallest above failsBelow), else null. */
  failedNext(batchSize) {
    if (this.failsAt !== null && batchSize === this.failsAt - 1) return this.failsAt;
    if (this.failsBelow !== null && batchSize === this.failsBelow + 1) return this.failsBelow;
    return null;
  }

  /** Whether batchSize is the end of the range that a CPU's RAM set: the capacity of a report
   * without a memory bound is the RAM free after its samples over the heap a process keeps
   * beside its tensors (Device.step_capacity_bytes), where "Measure at N" would then refuse. */
  ramEnd(batchSize) {
    const grows = this.memoryLines.length > 0 && this.memoryLines[this.memoryLines.length - 1].slope > 0;
    return !this.memoryBound && grows && this.capacityBytes > 0
      && batchSize === this.maxBatchSize() && this.capacityLimit() <= batchSize;
  }

  /**
   * knee.knee_batch_size: the smallest integer x in [minBatchSize, top] with throughput(2x) <
   * (1 + g)·throughput(x). Between the points where x or 2x crosses a breakpoint, T(x) and T(2x)
   * are each one line and the condition is linear, A·x < B. Null when no batch satisfies it.
   */
  knee() {
    if (!this.time || !this.memory) return null;
    const time = this.timeLines;
    if (time[time.length - 1].slope <= 0) return null;
    const [bottom, top] = [this.minBatchSize(), this.maxBatchSize()];
    const cuts = new Set([bottom, top]);
    for (const x of breakpoints(time)) {
      for (const v of [x, x / 2]) if (bottom < v && v < top) cuts.add(v);
    }
    const edges = [...cuts].sort((a, b) => a - b);
    const g = KNEE_GAIN;
    for (let i = 0; i + 1 < edges.length; i++) {
      const [lo, hi] = [edges[i], edges[i + 1]];
      const here = lineAt(time, (lo + hi) / 2);
      const there = lineAt(time, lo + hi);
      const a = 2 * here.slope - 2 * (1 + g) * there.slope;
      const b = (1 + g) * there.intercept - 2 * here.intercept;
      const first = Math.ceil(lo);
      let found;
      if (a === 0) found = b > 0 ? first : null;
      else if (a > 0) found = first < b / a ? first : null;
      else {
        const bound = b / a;
        if (Number.isNaN(bound) || !(bound < MAX_BATCH_SIZE)) found = null;
        else found = bound < first ? first : Math.floor(bound) + 1;
      }
      if (found !== null && found <= hi) return found;
    }
    return null;
  }
}
