// One rendered Report: bars, navigation, breakdowns and code view wired together. Rebuilt when
// the report trait changes; the view state that outlives it (the drill path) is handed over.

import { createActions } from "./actions.js";
import { createBars } from "./bars.js";
import { assignStyles, createBreakdown, createNav } from "./breakdown.js";
import { drawnCategories } from "./categories.js";
import { createCodeView } from "./codeview.js";
import { h } from "./dom.js";
import { applyEdit, createEditNotice } from "./edit.js";
import { formatBytes, formatFrame, formatMs, formatPercent } from "./format.js";
import { groupRepeatedOps, groupTooltipLines } from "./group.js";
import { isLive } from "./kernel.js";
import { segmentLines } from "./lines.js";
import { createPeakNote } from "./peaknote.js";
import { Predictor } from "./predict.js";
import { createRooflinePlot, deviceRoof, FLOP_FIELDS, flopsText, nodeFlops } from "./roofline.js";
import { createSamplesPlot } from "./samplesplot.js";
import { fraction } from "./scale.js";
import {
  applyScale, indexTree, inOptimizer, isDrillable, memorySegments, Navigator, NODE_KIND, nodeLabel, phaseTimes, scaledTime, scaleFor,
  timeSegments, VIEW_KIND,
} from "./tree.js";

const MAX_FRAMES_SHOWN = 3;

/**
 * model: the anywidget model (may lack save_changes/widget_manager in a standalone page).
 * el: the element events are dispatched from. tooltip: the view's tooltip.
 */
export function createReportView({ report, model, el, tooltip, signal, drillPath, initialBatch }) {
  const predictor = new Predictor(report.models);
  const categories = drawnCategories(report);
  // The drawn tree: repeated calls of an op in a module are one group node (group.js).
  const index = indexTree(groupRepeatedOps(report.tree, [...categories.flatMap((c) => c.nodeFields), ...FLOP_FIELDS]));
  const nav = new Navigator(index);
  if (drillPath) nav.drill(drillPath);
  const measured = Number(report.batch_size);
  let batch = predictor.canManipulate && Number.isInteger(initialBatch)
    ? Math.min(Math.max(predictor.minBatchSize(), initialBatch), predictor.maxBatchSize()) : measured;
  let scale = scaleFor(report, predictor, batch);
  let levels = null;
  let styleOf = null;
  let hovered = null; // {segment, kind}
  const linesCache = new Map();

  const canDrill = (s) => Boolean(s.node) && isDrillable(s.node) && s.node !== nav.current;
  const breakdownOpts = { signal, canDrill, onDrill: (s) => go(() => nav.drill(s.path)), onBack: () => go(() => nav.back()) };
  const timeView = createBreakdown({ ...breakdownOpts, kind: "time", title: "Run time", formatValue: formatMs, onHover: (s, e, move) => hover(s, "time", e, move) });
  const memView = createBreakdown({
    ...breakdownOpts, kind: "memory", title: "Memory", formatValue: formatBytes, onHover: (s, e, move) => hover(s, "memory", e, move),
    legend: categories.filter((c) => c.bytes !== 0),
  });
  const peakNote = createPeakNote({ report, predictor });
  // The roofline needs the device's peaks (0 when not measured) and work that has FLOPs.
  const roof = deviceRoof(report);
  const nodes = [...index.byPath.values()];
  const roofline = roof && nodes.some((n) => nodeFlops(n) > 0)
    ? createRooflinePlot({ ...breakdownOpts, roof, nodes, measuredBatch: measured, onHover: (s, e, move) => hover(s, "time", e, move) }) : null;
  const navView = createNav({
    signal,
    onBack: () => go(() => nav.back()),
    onTop: () => go(() => nav.top()),
    onCrumb: (depth) => go(() => nav.goTo(depth)),
  });
  const code = createCodeView({ signal, onSelectLine: selectLine });
  const notice = createEditNotice({ signal });
  const bars = createBars({ report, predictor, signal, initialBatch: batch, onPreview: preview, onCommit: commit, measurable: isLive(model) });
  const actions = createActions({ model, predictor, signal, getBatch: () => batch, measuredBatch: Number(report.batch_size) });
  // The edit's confirmation right under the bars a drag ends on, where the eye still is.
  bars.el.append(notice.el, actions.el);
  // The samples and the fitted curves under the bars; its marker follows the batch they show.
  const samples = createSamplesPlot({ report, predictor, signal });
  if (samples) bars.el.append(samples.el);
  samples?.setBatch(batch);

  const root = h("div", { class: "sk-report" }, [
    h("div", { class: "sk-main" }, [
      bars.el,
      h("div", { class: "sk-breakdowns" }, [navView.el, timeView.el, memView.el, peakNote.el, roofline?.el]),
    ]),
    code.el,
  ]);

  /** Move the drill path; returns whether it moved (and the level is drawn anew). */
  function go(move) {
    const moved = Boolean(move());
    if (moved) showLevel();
    return moved;
  }

  function showLevel() {
    const node = nav.current;
    levels = { time: timeSegments(report, index, node), memory: memorySegments(report, index, node) };
    rescale();
    styleOf = assignStyles([levels.time, levels.memory], categories);
    timeView.setLevel(levels.time, styleOf);
    memView.setLevel(levels.memory, styleOf);
    // The plot's points: the level's time segments, and the parts an "other" segment holds.
    roofline?.setLevel(levels.time.segments.flatMap((s) => (s.parts || [s]).map((segment) => ({ segment, drawnAs: s }))), styleOf);
    timeView.update(levels.time, scale.predicted);
    memView.update(levels.memory, scale.predicted);
    peakNote.update(scale);
    navView.update(nav.crumbs(), nav.atTop);
    code.setLevel({ node, isRoot: nav.atTop, report, optimizer: inOptimizer(index, node) });
    code.rescale(scale, { time: levels.time.total, memory: levels.memory.total });
    linesCache.clear();
    clearHover();
  }

  /** Live, while dragging: rescale both breakdowns for the predicted batch size. */
  function preview(next) {
    batch = next;
    samples?.setBatch(next);
    scale = scaleFor(report, predictor, batch);
    rescale();
    if (levels.memory.relayout) memView.setLevel(levels.memory, styleOf);
    timeView.update(levels.time, scale.predicted);
    memView.update(levels.memory, scale.predicted);
    peakNote.update(scale);
    code.rescale(scale, { time: levels.time.total, memory: levels.memory.total });
    actions.update();
    if (hovered && !tooltip.el.hidden) tooltip.show(tooltipLines(hovered.segment, hovered.kind), lastPointer.x, lastPointer.y);
  }

  /** Both levels at the current scale, and the time parts of "other" segments (a roofline point can show one). */
  function rescale() {
    applyScale(levels.time, scale);
    applyScale(levels.memory, scale);
    applyScale({ segments: levels.time.segments.flatMap((s) => s.parts || []) }, scale);
  }

  async function commit(next) {
    batch = next;
    samples?.setBatch(next);
    if (typeof model.set === "function") {
      model.set("selected_batch_size", next);
      model.save_changes?.();
    }
    notice.show(await applyEdit({ el, model, report, batch: next }));
  }

  function linesOf(segment) {
    if (!linesCache.has(segment.key)) linesCache.set(segment.key, segmentLines(segment, report.weights));
    return linesCache.get(segment.key);
  }

  const lastPointer = { x: 0, y: 0 };

  function hover(segment, kind, event, moveOnly) {
    if (!segment) return clearHover();
    if (Number.isFinite(event?.clientX) && (event.clientX || event.clientY)) {
      lastPointer.x = event.clientX;
      lastPointer.y = event.clientY;
    } else if (event?.target instanceof Element) {
      const r = event.target.getBoundingClientRect();
      lastPointer.x = r.left + r.width / 2;
      lastPointer.y = r.bottom;
    }
    if (moveOnly) return tooltip.move(lastPointer.x, lastPointer.y);
    hovered = { segment, kind };
    tooltip.show(tooltipLines(segment, kind), lastPointer.x, lastPointer.y);
    const paths = linkedPaths(segment);
    timeView.highlight(paths);
    memView.highlight(paths);
    roofline?.highlight(paths);
    code.highlight(linesOf(segment));
  }

  /**
   * The segments of both bars that show the hovered segment's nodes: its own, its parts' if it
   * is an "other" segment, and the "other" segments that hold any of them.
   */
  function linkedPaths(segment) {
    const paths = new Set([segment.path, ...(segment.parts || []).map((p) => p.path)]);
    for (const s of [...levels.time.segments, ...levels.memory.segments]) {
      if (s.parts?.some((p) => paths.has(p.path))) paths.add(s.path);
    }
    return paths;
  }

  function clearHover() {
    hovered = null;
    tooltip.hide();
    timeView.highlight(null);
    memView.highlight(null);
    roofline?.highlight(null);
    code.highlight(null);
  }

  /** A clicked code line highlights the segments whose nodes ran it. */
  function selectLine(key) {
    const paths = new Set();
    for (const s of [...levels.time.segments, ...levels.memory.segments]) {
      if (linesOf(s).has(key)) paths.add(s.path);
    }
    timeView.highlight(paths);
    memView.highlight(paths);
    roofline?.highlight(paths);
  }

  function tooltipLines(s, kind) {
    const level = kind === "time" ? levels.time : levels.memory;
    const format = kind === "time" ? formatMs : formatBytes;
    const where = nodeLabel(nav.current);
    const module = s.node && s.kind === NODE_KIND.MODULE;
    const title = !module ? s.name : s.own ? `${nodeLabel(s.node)} (${s.typeName}), its own` : `${s.name} (${s.typeName})`;
    const label = s.spec?.label ?? s.category;
    const lines = [{ text: kind === "memory" && title !== label ? `${title} \u2014 ${label}` : title }];
    // A share of the drawn bar (the positive segments), so a part is never more than 100 % of
    // the whole even when a negative remainder (listed beside the bar) lowers the total.
    lines.push({ class: "sk-tooltip-value", text: `${format(s.value)} \u00b7 ${formatPercent(fraction(s.value, level.positive))} of ${where}` });
    lines.push(...groupTooltipLines(s, format));
    if (kind === "time" && s.node) {
      // The phases the node ran in, each at this segment's scale (the optimizer's time stays).
      const phases = phaseTimes(s.node, s.optimizer)
        .map(([phase, ms]) => `${phase} ${ms === null ? "none" : formatMs(scaledTime(scale, ms, s.optimizer ? ms : 0))}`);
      if (phases.length) lines.push({ text: phases.join(" \u00b7 ") });
      // Measured, also while a drag predicts another batch size: the FLOPs would grow with the
      // batch but the bytes moved would not all (weights), so the share of the roof cannot be
      // predicted from the report (roofline.js); the values say which batch they are of.
      const flops = flopsText(s.node, roof);
      if (flops) lines.push({ class: "sk-tooltip-flops", text: scale.predicted ? `${flops} (measured batch)` : flops });
    }
    if (kind === "memory" && s.node && s.kind === NODE_KIND.MODULE) {
      const adds = [["forward", s.node.forward_peak_bytes], ["backward", s.node.backward_peak_bytes]]
        .filter(([, bytes]) => Number(bytes) > 0);
      if (adds.length) lines.push({ text: `adds at most ${adds.map(([phase, bytes]) => `${formatBytes(Number(bytes))} in ${phase}`).join(" \u00b7 ")} (measured batch)` });
      if (Number(s.node.activation_bytes) > 0) lines.push({ text: `saves ${formatBytes(Number(s.node.activation_bytes))} for backward (measured batch)` });
    }
    const parts = s.node && s.spec ? s.spec.members.filter((m) => m.node_field) : [];
    if (parts.length > 1) {
      // A segment carrying several categories (weights + grads) says how much is each.
      lines.push({ text: parts.map((m) => `${m.label} ${formatBytes(Number(s.node[m.node_field]) || 0)}`).join(" \u00b7 ") });
    }
    if (s.value < 0) lines.push({ class: "sk-tooltip-note", text: "negative: the parts measured separately add up to more than the whole" });
    // where it is in the model; not for the nodes that stand for a part of the step no module
    // holds ("untracked [untracked]" under a segment named "other" read as a second name)
    if (s.path && s.node && s.kind !== NODE_KIND.UNTRACKED && s.kind !== NODE_KIND.OPTIMIZER) {
      lines.push({ class: "sk-tooltip-path", text: `${s.kind} ${s.path}` });
    }
    const frames = s.frames.slice(0, MAX_FRAMES_SHOWN).map(formatFrame);
    if (frames.length) lines.push({ class: "sk-tooltip-frames", text: frames.join("  \u2190 ") });
    if (scale.predicted) lines.push({ class: "sk-tooltip-note", text: `predicted at batch size ${scale.batch}` });
    if (canDrill(s)) lines.push({ class: "sk-tooltip-hint", text: s.kind === VIEW_KIND.GROUP ? "double-click to see each call" : "double-click to open" });
    return lines;
  }

  showLevel();

  return {
    el: root,
    get drillPath() {
      return nav.atTop ? null : nav.current.path;
    },
    /** The kernel sent a measurement (the `measurement` trait changed). */
    measured: () => actions.update(),
    /** Another view of the same model committed a batch size: follow it. */
    follow(next) {
      if (!predictor.canManipulate || !Number.isInteger(next) || next === bars.batch) return;
      bars.setBatch(next);
      preview(next);
    },
  };
}
