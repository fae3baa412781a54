// The measured samples and the fitted curves (issue 15): two small SVG panels under the bars,
// iteration time and peak memory against the batch size. The points are what the profiler
// measured (report.samples; the user's batch drawn ringed); the curve is the performance model
// (predict.js) over the drag range, from an octave or more below the smallest sample (never below
// minBatchSize()) to maxBatchSize(): solid inside the measured range, dashed where it
// extrapolates. A vertical marker follows the batch size the bars show (at the frame's edge for a
// batch size outside the frame).
//
// Both axes are logarithmic. Across: batch sizes run from 1 to thousands and the samples are
// spread geometrically (powers of two), so a linear axis would crowd them into its left edge;
// the axis starts an octave or more below the smallest sample, not at 1, or samples at 1M–4M
// would be squeezed into the right edge of 20 empty octaves.
// Up: the values over the range span orders of magnitude too (8× the largest sample, or a
// fixed cost that dominates at batch 1), and on a linear axis the measured points would sit in
// the bottom few pixels under the extrapolated top. On log-log a model a·x + b reads as what it
// means: flat where the fixed cost b dominates (launch-bound time, weights in memory), then
// rising with slope one where the per-sample cost takes over, so the bend is where it looks to
// be, and a gap between a point and the curve is a relative error, the same size anywhere.
//
// Optional predictor fields (treated as absent when undefined): bendBatchSize (where the time
// curve bends from flat to growing: a tick "bend N") and launchBoundUpTo (time is flat across
// every sample up to N: said in the title). Everything shown is text (textContent).

import { h } from "./dom.js";
import { formatBytes, formatInt, formatMs, formatThroughput } from "./format.js";
import { num } from "./numbers.js";
import { peakPhase, phaseWords } from "./peaknote.js";
import { linearScale } from "./scale.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 250;
const HEIGHT = 118;
const MARGIN = { left: 52, right: 10, top: 8, bottom: 28 };
const CURVE_POINTS = 60; // log-spaced; the model is piecewise linear, this is smooth enough
const MAX_X_TICKS = 6;
// The batch labels' width, estimated from their characters (a hidden output has no layout to
// measure): a digit is about 0.6 of the font size wide (a comma less), at .sk-samples-tick's 10 px.
const TICK_FONT_PX = 10;
const CHAR_WIDTH = 0.6;
const LABEL_GAP_PX = 4;
const MAX_Y_TICKS = 4;
// Without a curve to draw: the reason, and what to do, is said once, under the bars above
export const NO_CURVE = "No fitted curve: dragging is off, for the reason under the bars above";
const PAD = 0.06; // of each axis' log span, so edge points and their rings stay inside

const METRICS = [
  { name: "time", label: "Iteration time", field: "iteration_ms", reportField: "iteration_ms", format: formatMs, unit: 1, predict: (p, b) => p.predictIterationMs(b) },
  { name: "memory", label: "Peak memory", field: "peak_bytes", reportField: "peak_bytes", format: formatBytes, unit: 1024, predict: (p, b) => p.predictPeakBytes(b) },
];

const positive = (v) => typeof v === "number" && Number.isFinite(v) && v > 0;
const fix = (v) => v.toFixed(2);

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * The samples that have a usable batch size: [{batch, time, memory, phase}] (a bad value is
 * null). `phase` names the phase of the step that held the memory peak there (the largest of
 * the sample's peak_by_phase, which the memory curve's lines go through), or null.
 */
export function usableSamples(samples) {
  if (!Array.isArray(samples)) return [];
  return samples.flatMap((s) => {
    const batch = num(s?.batch_size);
    if (!positive(batch)) return [];
    const time = num(s.iteration_ms);
    const memory = num(s.peak_bytes);
    return [{ batch, time: positive(time) ? time : null, memory: positive(memory) ? memory : null, phase: peakPhase(s.peak_by_phase) }];
  });
}

/** The batch sizes the curve is drawn at: log-spaced over [bottom, top] plus the ones that matter. */
export function curveBatches(bottom, top, extra = []) {
  const out = new Set([bottom, top]);
  for (let i = 1; i < CURVE_POINTS; i += 1) out.add(bottom * (top / bottom) ** (i / CURVE_POINTS));
  for (const b of extra) if (positive(b) && b >= bottom && b <= top) out.add(b);
  return [...out].sort((a, b) => a - b);
}

/** A log10 scale from [lo, hi] (values) onto [r0, r1] (pixels), its span padded by PAD. */
function logScale(lo, hi, r0, r1) {
  let [a, b] = [Math.log10(lo), Math.log10(hi)];
  if (b - a < 1e-9) [a, b] = [a - 0.2, b + 0.2]; // one value: a window around it
  const pad = (b - a) * PAD;
  const s = linearScale([a - pad, b + pad], [r0, r1]);
  const scale = (v) => s(Math.log10(v));
  scale.lo = 10 ** (a - pad);
  scale.hi = 10 ** (b + pad);
  return scale;
}

const labelWidth = (batch) => formatInt(batch).length * TICK_FONT_PX * CHAR_WIDTH;

/**
 * Powers of two within [lo, hi] to label, `at` placing each (px, 0 … WIDTH): those whose label
 * fits in the panel, every n-th, n the smallest that keeps at most MAX_X_TICKS of them and
 * their labels apart ("1,048,576" beside "2,097,152" would run into each other).
 */
export function batchTicks(lo, hi, at) {
  const fits = (b) => at(b) - labelWidth(b) / 2 >= 0 && at(b) + labelWidth(b) / 2 <= WIDTH;
  const candidates = [];
  for (let e = Math.max(0, Math.ceil(Math.log2(lo))); e <= Math.floor(Math.log2(hi)); e += 1) {
    if (fits(2 ** e)) candidates.push(2 ** e);
  }
  const apart = (ticks) => ticks.every((b, i) => i === 0
    || at(b) - at(ticks[i - 1]) >= (labelWidth(b) + labelWidth(ticks[i - 1])) / 2 + LABEL_GAP_PX);
  for (let step = Math.max(1, Math.ceil(candidates.length / MAX_X_TICKS)); step < candidates.length; step += 1) {
    const ticks = candidates.filter((_, i) => i % step === 0);
    if (apart(ticks)) return ticks;
  }
  return candidates.slice(0, 1);
}

/**
 * Round values within [lo, hi] to label a log axis, at most MAX_Y_TICKS: 1, 10, 100 … of the
 * unit (ms; bytes in KiB, MiB, …: unit 1024 keeps "2 MiB", not "1.91 MiB"), else 1-2-5, else
 * every digit, else every half and tenth of one (150 µs, 200 µs); the first of these that puts
 * two ticks in the window, every n-th of them. A window narrower still is labelled at its ends.
 */
export function valueTicks(lo, hi, unit) {
  const candidates = []; // {value, k}: value = k/10 · 10^e · unit^j, k in 10 … 99
  const units = unit === 1 ? [1] : [0, 1, 2, 3, 4, 5].map((j) => unit ** j);
  const decades = unit === 1 ? [-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7] : [0, 1, 2];
  for (const u of units) {
    for (const e of decades) {
      for (let k = 10; k < 100; k += 1) {
        const m = (k * 10 ** e) / 10;
        if (unit === 1 || m < unit) candidates.push({ value: m * u, k });
      }
    }
  }
  const inside = candidates.filter((c) => c.value >= lo && c.value <= hi).sort((a, b) => a.value - b.value);
  const sets = [(k) => k === 10, (k) => k === 10 || k === 20 || k === 50, (k) => k % 10 === 0, (k) => k % 5 === 0, () => true];
  for (const inSet of sets) {
    const ticks = inside.filter((c) => inSet(c.k)).map((c) => c.value);
    if (ticks.length < 2) continue;
    const step = Math.ceil(ticks.length / MAX_Y_TICKS);
    return ticks.filter((_, i) => i % step === 0);
  }
  return [lo, hi];
}

/** One panel: its frame, axes, points, curve and the marker's parts. */
function buildPanel(metric, { samples, predictor, live, bottom, top, range, measuredBatch, reportValue }) {
  const points = samples.filter((s) => s[metric.name] !== null).map((s) => ({ batch: s.batch, value: s[metric.name], phase: metric.name === "memory" ? s.phase : null }));
  let curve = [];
  if (live) {
    const batches = curveBatches(bottom, top, [...samples.map((s) => s.batch), ...range]);
    curve = batches.map((b) => {
      let value = NaN;
      try {
        value = metric.predict(predictor, b);
      } catch {
        // A model without this line draws no curve; the points still show.
      }
      return { batch: b, value };
    });
  }
  const values = [...points, ...curve].map((p) => p.value).filter(positive);
  if (!values.length) return null;
  const xs = [bottom, top, ...samples.map((s) => s.batch)].filter(positive);
  const [x0, x1, y0, y1] = [MARGIN.left, WIDTH - MARGIN.right, HEIGHT - MARGIN.bottom, MARGIN.top];
  const x = logScale(Math.min(...xs), Math.max(...xs), x0, x1);
  const y = logScale(Math.min(...values), Math.max(...values), y0, y1);

  const plot = svg("svg", {
    class: "sk-samples-svg", width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img", "aria-label": `${metric.label} against batch size: ${points.length} measured samples${curve.length ? " and the fitted curve" : ""}`,
  });
  const axes = svg("g", { class: "sk-samples-axes" });
  for (const b of batchTicks(x.lo, x.hi, x)) {
    axes.append(svg("line", { class: "sk-samples-grid", x1: fix(x(b)), x2: fix(x(b)), y1: y0, y2: y1 }));
    axes.append(svg("text", { class: "sk-samples-tick", x: fix(x(b)), y: y0 + 12, "text-anchor": "middle" }, formatInt(b)));
  }
  for (const v of valueTicks(y.lo, y.hi, metric.unit)) {
    axes.append(svg("line", { class: "sk-samples-grid", x1: x0, x2: x1, y1: fix(y(v)), y2: fix(y(v)) }));
    axes.append(svg("text", { class: "sk-samples-tick", x: x0 - 4, y: fix(y(v) + 3), "text-anchor": "end" }, metric.format(v)));
  }
  axes.append(svg("path", { class: "sk-samples-axis", d: `M${x0},${y1}V${y0}H${x1}` }));
  axes.append(svg("text", { class: "sk-samples-title", x: (x0 + x1) / 2, y: HEIGHT - 4, "text-anchor": "middle" }, "batch size"));
  plot.append(axes);

  // The curve in three parts: below the measured range, inside it, above it; each part a path
  // that breaks where the model has no positive value (nothing to draw on a log axis).
  const curves = svg("g", { class: "sk-samples-curves" });
  const [lo, hi] = range;
  const parts = [
    ["extrapolated", (b) => b <= lo], ["measured", (b) => b >= lo && b <= hi], ["extrapolated", (b) => b >= hi],
  ];
  for (const [part, within] of parts) {
    let d = "";
    let pen = "M";
    for (const p of curve) {
      if (!within(p.batch)) continue;
      if (!positive(p.value)) {
        pen = "M";
        continue;
      }
      d += `${pen}${fix(x(p.batch))},${fix(y(p.value))}`;
      pen = "L";
    }
    if (d.includes("L")) curves.append(svg("path", { class: `sk-samples-curve sk-samples-${part}`, "data-part": part, d }));
  }
  plot.append(curves);

  const marker = svg("g", { class: "sk-samples-marker", "data-skyline": "samples-marker" });
  const markerLine = svg("line", { class: "sk-samples-marker-line", y1: y0, y2: y1 });
  const ring = svg("circle", { class: "sk-samples-ring", r: 4 });
  marker.append(markerLine, ring);
  plot.append(marker); // under the bend's label: its line through the text read as a digit

  const bend = metric.name === "time" ? predictor.bendBatchSize : undefined;
  if (live && positive(bend) && bend <= top) {
    const bx = fix(x(bend));
    const tick = svg("g", { class: "sk-samples-bend", "data-skyline": "samples-bend" });
    tick.append(
      svg("line", { class: "sk-samples-bend-tick", x1: bx, x2: bx, y1: y0, y2: y0 - 7 }),
      svg("text", { class: "sk-samples-label", x: bx, y: y0 - 9, "text-anchor": x(bend) > (x0 + x1) / 2 ? "end" : "start" }, `bend ${formatInt(bend)}`),
    );
    plot.append(tick);
  }

  const dots = svg("g", { class: "sk-samples-points" });
  for (const p of points) {
    const user = p.batch === measuredBatch;
    const dot = svg("circle", {
      class: `sk-samples-point${user ? " sk-samples-user" : ""}`, cx: fix(x(p.batch)), cy: fix(y(p.value)), r: user ? 4.5 : 3,
      "data-skyline": "samples-point", "data-batch": p.batch, "data-user": user ? "true" : null,
    });
    const where = p.phase ? `, the peak in ${phaseWords(p.phase)}` : "";
    dot.append(svg("title", {}, `batch ${formatInt(p.batch)}${user ? " (yours)" : ""}: ${metric.format(p.value)} measured${where}`));
    dots.append(dot);
  }
  plot.append(dots);

  /** Move the marker to batch b; its ring sits on the value the bars show there. */
  function setBatch(b) {
    const bx = fix(x(Math.min(Math.max(b, x.lo), x.hi)));
    markerLine.setAttribute("x1", bx);
    markerLine.setAttribute("x2", bx);
    let value = null;
    if (b === measuredBatch && positive(reportValue)) value = reportValue;
    else if (live) {
      try {
        value = metric.predict(predictor, b);
      } catch {
        value = null;
      }
    }
    const shown = positive(value) && value >= y.lo && value <= y.hi;
    ring.setAttribute("cx", bx);
    ring.setAttribute("cy", fix(shown ? y(value) : y0));
    if (shown) ring.removeAttribute("visibility");
    else ring.setAttribute("visibility", "hidden");
    marker.dataset.batch = String(b);
  }

  const el = h("div", { class: "sk-samples-panel", data: { metric: metric.name } }, [
    h("div", { class: "sk-samples-panel-label", text: metric.label }),
    plot,
  ]);
  return { el, setBatch };
}

/** A legend key: a swatch drawn by CSS and its words. */
function key(kind, text) {
  return h("span", { class: "sk-samples-key" }, [h("span", { class: `sk-samples-swatch sk-samples-swatch-${kind}`, attrs: { "aria-hidden": "true" } }), text]);
}

/**
 * The samples plot of a report, or null when it has fewer than two measured batch sizes.
 * predictor: predict.js's Predictor. setBatch(b) moves the marker (called while dragging).
 */
export function createSamplesPlot({ report, predictor }) {
  const samples = usableSamples(report?.samples);
  if (new Set(samples.map((s) => s.batch)).size < 2) return null;
  const live = Boolean(predictor?.canManipulate);
  const batches = samples.map((s) => s.batch);
  const measured = Array.isArray(predictor?.measuredRange) && predictor.measuredRange.every(positive)
    ? predictor.measuredRange : [Math.min(...batches), Math.max(...batches)];
  const smallest = Math.min(...batches);
  let top = Math.max(...batches);
  // A power of two at most half the smallest sample, so the curve shows below it too.
  let bottom = Math.min(Math.max(1, 2 ** Math.floor(Math.log2(smallest / 2))), smallest);
  if (live) {
    try {
      top = Math.max(top, predictor.maxBatchSize());
      bottom = Math.min(Math.max(bottom, predictor.minBatchSize()), smallest); // nothing to drag to below it
    } catch {
      // no memory line: the frame ends at the largest sample
    }
  }
  const measuredBatch = num(report.batch_size);
  const context = { samples, predictor, live, bottom, top, range: measured, measuredBatch };
  const panels = METRICS.map((m) => buildPanel(m, { ...context, reportValue: num(report[m.reportField]) })).filter(Boolean);
  if (!panels.length) return null;

  const noteParts = [`measured at batch ${formatInt(measured[0])}\u2013${formatInt(measured[1])}`];
  const flat = predictor?.launchBoundUpTo;
  // a GPU's flat time is the host launching kernels; a CPU launches nothing (a fixed cost per step)
  const flatWhy = report.device?.kind === "cuda" ? "launch-bound" : "time flat";
  if (positive(flat)) noteParts.push(`${flatWhy} up to at least ${formatInt(flat)}`);
  const asymptote = live ? predictor.asymptoticThroughput : null;
  if (positive(asymptote)) noteParts.push(`asymptote ${formatThroughput(asymptote)}`);
  if (live && predictor.kneeBatchSize !== null && predictor.placedKnee === null) {
    const [low, high] = predictor.kneeRange;
    noteParts.push(`no knee drawn: the samples put it anywhere from ${formatInt(low)} to ${high === null ? "past the drag's end" : formatInt(high)}`);
  }
  const keys = [key("point", "measured"), key("user", "your batch")];
  if (live) keys.push(key("measured", "fit, measured range"), key("extrapolated", "extrapolated"));
  const el = h("section", { class: "sk-samples", data: { skyline: "samples-plot" } }, [
    h("div", { class: "sk-breakdown-head" }, [
      h("span", { class: "sk-breakdown-title", text: "Samples" }),
      h("span", { class: "sk-samples-note", data: { skyline: "samples-note" }, text: noteParts.join(" \u00b7 ") }),
    ]),
    h("div", { class: "sk-samples-legend" }, keys),
    live ? null : h("div", { class: "sk-samples-reason", data: { skyline: "samples-reason" }, text: NO_CURVE }),
    h("div", { class: "sk-samples-panels" }, panels.map((p) => p.el)),
  ]);

  let batch = null;
  function setBatch(next) {
    const b = num(next);
    if (!positive(b) || b === batch) return;
    batch = b;
    for (const p of panels) p.setBatch(b);
  }
  setBatch(positive(measuredBatch) ? measuredBatch : samples[0].batch);
  return { el, setBatch, get batch() { return batch; } };
}
