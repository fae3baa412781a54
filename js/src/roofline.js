// FLOPs and the roofline (Williams et al., 2009; per layer as in XSP). A node doing F FLOPs
// (forward plus backward, PyTorch's formulas) in its measured time t achieves F/t; moving B
// bytes, its arithmetic intensity is F/B and the most it can reach is the roofline
// min(peak FLOP/s, F/B × bandwidth) of the device the report measured (report.device; both 0
// in older reports, which then have no roofline). skyline_nb/profiler/roofline.py holds the
// same rule. The plot is a small log-log SVG: intensity across, FLOP/s up, the two roofs, one
// point per part of the drilled level that does FLOP-counted work.
//
// All of it is measured: at another batch size FLOPs grow with the batch but the bytes moved do
// not (weights are read once whatever the batch), and the report does not split them, so the
// intensity, and with it the point and its share of the roof, cannot be predicted.

import { h } from "./dom.js";
import { formatPercent, formatSi } from "./format.js";
import { linearScale } from "./scale.js";
import { NODE_KIND, nodeTime } from "./tree.js";

/** The node fields a view node (a group of calls, group.js) sums over its calls. */
export const FLOP_FIELDS = Object.freeze(["forward_flops", "backward_flops", "flop_bytes_moved"]);

const POINT = '[data-skyline="roof-point"]';
const SVG_NS = "http://www.w3.org/2000/svg";
const WIDTH = 300;
const HEIGHT = 176;
const MARGIN = { left: 54, right: 10, top: 10, bottom: 30 };
const MAX_TICKS = 5; // decades labelled per axis, at most: a wider range labels every n-th
const MAX_NAMED = 8; // points named beside them; more would cover each other
const POINT_R = 4;
const CHAR_W = 6; // a 10 px label's character, wide enough for the boxes that must not overlap
const LABEL_H = 12;

/** {peak: FLOP/s, bandwidth: bytes/s} of the report's device, or null when not measured. */
export function deviceRoof(report) {
  const peak = Number(report.device?.peak_flops);
  const bandwidth = Number(report.device?.bandwidth);
  return peak > 0 && bandwidth > 0 ? { peak, bandwidth } : null;
}

export function nodeFlops(node) {
  return (Number(node?.forward_flops) || 0) + (Number(node?.backward_flops) || 0);
}

/** The most FLOP/s work of this intensity reaches; without bytes moved, the compute roof. */
export function attainable(roof, intensity) {
  return intensity === null ? roof.peak : Math.min(roof.peak, intensity * roof.bandwidth);
}

/**
 * A node's work as measured: {flops, rate (FLOP/s), intensity (FLOP/byte), share (of the
 * attainable rate)}; rate, intensity and share are null where time, bytes or the roof are
 * missing. Null for a node without FLOPs.
 */
export function flopStats(node, roof) {
  const flops = nodeFlops(node);
  if (!(flops > 0)) return null;
  const seconds = nodeTime(node) / 1000;
  const bytes = Number(node.flop_bytes_moved) || 0;
  const rate = seconds > 0 ? flops / seconds : null;
  const intensity = bytes > 0 ? flops / bytes : null;
  const share = roof && rate !== null ? rate / attainable(roof, intensity) : null;
  return { flops, rate, intensity, share };
}

/** "FLOPs 1.23 G · 45.6 GFLOP/s · 38.0% of attainable", or null for a node without FLOPs. */
export function flopsText(node, roof) {
  const stats = flopStats(node, roof);
  if (!stats) return null;
  const parts = [`FLOPs ${formatSi(stats.flops)}`];
  if (stats.rate !== null) parts.push(formatSi(stats.rate, "FLOP/s"));
  if (stats.share !== null) parts.push(`${formatPercent(stats.share)} of attainable`);
  return parts.join(" \u00b7 ");
}

/** The whole decades [lo, hi] (exponents) that hold every value, at least one decade wide. */
function decades(values) {
  const lo = Math.floor(Math.log10(Math.min(...values)));
  const hi = Math.ceil(Math.log10(Math.max(...values)));
  return [lo, Math.max(hi, lo + 1)];
}

/**
 * Where the plot draws: log10 scales from values to SVG coordinates over the whole decades
 * that hold the ridge, the compute roof and every plotted node's (intensity, rate), so a
 * drill keeps the frame and points of different levels compare. `stats` are flopStats.
 */
export function plotFrame(roof, stats) {
  const plotted = stats.filter((s) => s.rate !== null && s.intensity !== null);
  const xDecades = decades([roof.peak / roof.bandwidth, ...plotted.map((s) => s.intensity)]);
  const yDecades = decades([roof.peak, ...plotted.map((s) => s.rate)]);
  const sx = linearScale(xDecades, [MARGIN.left, WIDTH - MARGIN.right]);
  const sy = linearScale(yDecades, [HEIGHT - MARGIN.bottom, MARGIN.top]);
  return { xDecades, yDecades, x: (v) => sx(Math.log10(v)), y: (v) => sy(Math.log10(v)) };
}

/**
 * The two roofs as segments in data units: bandwidth × intensity up to the ridge (from where
 * it enters the frame), then the peak to the right edge.
 */
export function roofSegments(roof, frame) {
  const ridge = roof.peak / roof.bandwidth;
  const left = Math.max(10 ** frame.xDecades[0], 10 ** frame.yDecades[0] / roof.bandwidth);
  return {
    memory: [[left, left * roof.bandwidth], [ridge, roof.peak]],
    compute: [[ridge, roof.peak], [10 ** frame.xDecades[1], roof.peak]],
  };
}

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The exponents of the decades labelled on an axis: all of them, or every n-th of many. */
function tickExponents([lo, hi]) {
  const step = Math.ceil((hi - lo) / MAX_TICKS);
  const ticks = [];
  for (let e = lo; e <= hi; e += step) ticks.push(e);
  return ticks;
}

function axes(frame) {
  const [x0, x1] = [MARGIN.left, WIDTH - MARGIN.right];
  const [y0, y1] = [HEIGHT - MARGIN.bottom, MARGIN.top];
  const g = svg("g", { class: "sk-roof-axes" });
  for (const e of tickExponents(frame.xDecades)) {
    const x = frame.x(10 ** e);
    g.append(svg("line", { class: "sk-roof-grid", x1: x, x2: x, y1: y0, y2: y1 }));
    g.append(svg("text", { class: "sk-roof-tick", x, y: y0 + 12, "text-anchor": "middle" }, formatSi(10 ** e)));
  }
  for (const e of tickExponents(frame.yDecades)) {
    const y = frame.y(10 ** e);
    g.append(svg("line", { class: "sk-roof-grid", x1: x0, x2: x1, y1: y, y2: y }));
    g.append(svg("text", { class: "sk-roof-tick", x: x0 - 4, y: y + 3, "text-anchor": "end" }, formatSi(10 ** e)));
  }
  g.append(svg("path", { class: "sk-roof-axis", d: `M${x0},${y1}V${y0}H${x1}` }));
  g.append(svg("text", { class: "sk-roof-title", x: (x0 + x1) / 2, y: HEIGHT - 4, "text-anchor": "middle" }, "FLOP per byte moved"));
  g.append(svg("text", { class: "sk-roof-title", x: 0, y: 0, "text-anchor": "middle", transform: `translate(9 ${(y0 + y1) / 2}) rotate(-90)` }, "FLOP/s"));
  return g;
}

/** The box {x0, x1, y0, y1} of a 10 px label at baseline y, anchored "start" or "end" at x. */
function labelBox(x, y, text, anchor) {
  const width = CHAR_W * String(text).length;
  const x0 = anchor === "end" ? x - width : x;
  return { x0, x1: x0 + width, y0: y - LABEL_H + 2, y1: y + 2 };
}

const overlaps = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/** Where the peak roof's label sits: above the flat roof's right end. */
function peakLabel(roof, frame) {
  return { x: WIDTH - MARGIN.right - 2, y: frame.y(roof.peak) - 4, text: formatSi(roof.peak, "FLOP/s") };
}

/**
 * Where a point's name goes: above it, to its right (to its left near the right edge); below
 * it when above would cover the peak roof's label (a point on the flat roof) or a name already
 * placed (`taken`: their boxes); then the other side, above or below. None of those free (three
 * points within a few pixels, as a GAN's two nets and a double backward's matmuls were, their
 * names printed over each other): null, and the point keeps its name in its tooltip.
 */
export function nameSpot(cx, cy, name, roof, frame, taken = []) {
  const right = cx < WIDTH - 70;
  const sides = right ? [[cx + 6, "start"], [cx - 6, "end"]] : [[cx - 6, "end"], [cx + 6, "start"]];
  const peak = peakLabel(roof, frame);
  const blocked = [labelBox(peak.x, peak.y, peak.text, "end"), ...taken];
  for (const [x, anchor] of sides) {
    for (const y of [cy - 5, cy + LABEL_H + 2]) {
      if (!blocked.some((box) => overlaps(labelBox(x, y, name, anchor), box))) return { x, y, anchor };
    }
  }
  return null;
}

function roofLines(roof, frame) {
  const g = svg("g", { class: "sk-roof-roofs" });
  const at = ([x, y]) => [frame.x(x), frame.y(y)];
  const segments = roofSegments(roof, frame);
  for (const [name, [from, to]] of Object.entries(segments)) {
    const [[x1, y1], [x2, y2]] = [at(from), at(to)];
    g.append(svg("line", { class: "sk-roof-line", "data-roof": name, x1, y1, x2, y2 }));
  }
  // Each roof says its height: the peak above the flat roof's right end, the bandwidth along
  // the slanted one, in the middle.
  const [[mx1, my1], [mx2, my2]] = segments.memory.map(at);
  const angle = (Math.atan2(my2 - my1, mx2 - mx1) * 180) / Math.PI;
  const [mx, my] = [(mx1 + mx2) / 2, (my1 + my2) / 2];
  const peak = peakLabel(roof, frame);
  g.append(svg("text", { class: "sk-roof-label", "data-roof": "compute", x: peak.x, y: peak.y, "text-anchor": "end" }, peak.text));
  g.append(svg("text", { class: "sk-roof-label", "data-roof": "memory", x: mx, y: my - 4, "text-anchor": "middle", transform: `rotate(${angle.toFixed(2)} ${mx} ${my})` }, formatSi(roof.bandwidth, "B/s")));
  return g;
}

// A part of the level without a point is named under the plot from this share of its time.
const MISSING_SHARE = 0.1;

/**
 * The roofline plot of a report with a roof and FLOPs. nodes: every node of the drawn tree
 * (the frame fits them all). onHover(segment|null, event, moveOnly), canDrill(segment) and
 * onDrill(segment) as a breakdown's: a double-click on a point opens its module.
 * measuredBatch: the batch size the values are of. setLevel(items, styleOf) draws the level: items are [{segment, drawnAs}], the
 * segment a point stands for and the one that draws it in the breakdown (itself, or the
 * "other" segment holding it), whose style (breakdown.js assignStyles) the point takes.
 */
export function createRooflinePlot({ roof, nodes, measuredBatch, signal, onHover, canDrill, onDrill }) {
  const stats = [...nodes].map((n) => flopStats(n, roof)).filter(Boolean);
  const frame = plotFrame(roof, stats);
  const points = svg("g", { class: "sk-roof-points" });
  const plot = svg("svg", {
    class: "sk-roof-svg", width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "group", "aria-label": "Roofline: FLOP/s against FLOP per byte moved",
  });
  plot.append(axes(frame), roofLines(roof, frame), points);
  const note = h("span", { class: "sk-roof-note", text: `measured at batch size ${measuredBatch}` });
  const empty = h("div", { class: "sk-empty", text: "nothing at this level does FLOP-counted work", attrs: { hidden: "" } });
  const missing = h("div", { class: "sk-roof-missing", data: { skyline: "roof-missing" }, attrs: { hidden: "" } });
  const el = h("section", { class: "sk-roofline", data: { skyline: "roofline" } }, [
    h("div", { class: "sk-breakdown-head" }, [h("span", { class: "sk-breakdown-title", text: "Roofline" }), note]),
    plot,
    empty,
    missing,
  ]);
  const byElement = new WeakMap(); // point -> segment
  let hovered = null;

  function setLevel(items, styleOf) {
    const drawn = [];
    for (const { segment, drawnAs } of items) {
      const s = flopStats(segment.node, roof);
      if (!s || s.rate === null || s.intensity === null) continue;
      const style = styleOf(drawnAs);
      const [cx, cy] = [frame.x(s.intensity), frame.y(s.rate)];
      const point = svg("circle", {
        class: `sk-roof-point${style.palette === null ? "" : ` sk-c${style.palette}`}`,
        cx: cx.toFixed(2), cy: cy.toFixed(2), r: POINT_R, tabindex: 0,
        "data-skyline": "roof-point", "data-node": segment.path, "data-kind": drawnAs.kind,
        "aria-label": `${segment.name}: ${flopsText(segment.node, roof)}`,
        style: style.color ? `--sk-seg: ${style.color}` : null,
      });
      byElement.set(point, segment);
      drawn.push({ point, segment, cx, cy });
    }
    points.replaceChildren(...drawn.map((d) => d.point));
    if (drawn.length <= MAX_NAMED) {
      const taken = []; // the boxes of the names placed so far: the largest parts first
      for (const { segment, cx, cy } of drawn) {
        const spot = nameSpot(cx, cy, segment.name, roof, frame, taken);
        if (!spot) continue;
        taken.push(labelBox(spot.x, spot.y, segment.name, spot.anchor));
        points.append(svg("text", { class: "sk-roof-name", x: spot.x, y: spot.y, "text-anchor": spot.anchor }, segment.name));
      }
    }
    empty.hidden = drawn.length > 0;
    showMissing(items, drawn);
    hovered = null;
  }

  /**
   * Name the level's parts that hold a large share of its time but no point: no FLOP formula
   * counts their ops (an LSTM's fused kernels), so the plot alone would hide where the time is.
   */
  function showMissing(items, drawn) {
    const plotted = new Set(drawn.map((d) => d.segment));
    const total = items.reduce((acc, { segment }) => acc + Math.max(0, segment.value), 0);
    // with no point at all, the plot's own "nothing at this level…" says it
    const large = items.filter(({ segment }) => plotted.size && !plotted.has(segment) && segment.node
      && segment.kind !== NODE_KIND.UNTRACKED && total > 0 && segment.value >= MISSING_SHARE * total);
    const names = large.map(({ segment }) => `${segment.name} (${formatPercent(segment.value / total)} of the time)`);
    missing.textContent = names.length ? `not plotted, no FLOPs counted for their ops: ${names.join(", ")}` : "";
    missing.hidden = !names.length;
  }

  /** Mark the points of the node(s) in `paths` (a Set, or null), as the breakdowns do. */
  function highlight(paths) {
    for (const point of points.querySelectorAll(POINT)) point.classList.toggle("sk-roof-linked", Boolean(paths?.has(point.dataset.node)));
    plot.classList.toggle("sk-roof-highlight", Boolean(paths?.size));
  }

  const segmentOf = (target) => {
    const point = target instanceof Element ? target.closest(POINT) : null;
    return point ? byElement.get(point) ?? null : null;
  };
  const opts = { signal };
  plot.addEventListener("mouseover", (e) => {
    const s = segmentOf(e.target);
    if (s !== hovered) {
      hovered = s;
      onHover(s, e);
    }
  }, opts);
  plot.addEventListener("mousemove", (e) => {
    if (hovered) onHover(hovered, e, true);
  }, opts);
  plot.addEventListener("mouseleave", (e) => {
    hovered = null;
    onHover(null, e);
  }, opts);
  plot.addEventListener("focusin", (e) => {
    const s = segmentOf(e.target);
    if (s) onHover(s, e);
  }, opts);
  plot.addEventListener("focusout", (e) => onHover(null, e), opts);
  plot.addEventListener("dblclick", (e) => {
    const s = segmentOf(e.target);
    if (s && canDrill(s)) {
      e.preventDefault();
      onDrill(s);
    }
  }, opts);

  return { el, setLevel, highlight };
}
