// The breakdown tree: indexing, drill-down navigation, and the segments of one drill level.
// Pure data (no DOM) so navigation, sorting, untracked handling and scaling are unit-tested
// without a browser. Memory segments follow the categories the report carries (categories.js).

import { categoriesAt, drawnCategories, sampledCategories, splitsOverTree } from "./categories.js";
import { sum } from "./numbers.js";

/** Node kinds (NodeKind in skyline_nb/categories.py; a Python test keeps the two equal). */
export const NODE_KIND = Object.freeze({
  ROOT: "root", MODULE: "module", OP: "op", OPTIMIZER: "optimizer", UNTRACKED: "untracked",
});

/**
 * Kinds of nodes the widget makes only to draw a level (never in a report): a group of repeated
 * calls of one op (group.js) and the "other (N small)" segment that holds a level's small parts.
 */
export const VIEW_KIND = Object.freeze({ GROUP: "group", OTHER: "other" });

/** The category of every time segment; memory segments carry their memory category's key. */
export const TIME = "time";

/** Forward plus backward time of a node (backward_ms is null when nothing ran backward). */
export function nodeTime(node) {
  return (node.forward_ms || 0) + (node.backward_ms ?? 0);
}

/**
 * Whether `node` is the optimizer step or one of its parts (index: indexTree's). Its time does
 * not grow with the batch (the step touches parameters only) and it ran in neither forward nor
 * backward.
 */
export function inOptimizer(index, node) {
  for (let n = node; n; n = index.parentOf(n.path)) if (n.kind === NODE_KIND.OPTIMIZER) return true;
  return false;
}

/**
 * A node's measured time by phase of the step, [[phase, ms]] (ms null: nothing ran in that
 * phase): forward and backward for the model's nodes, "optimizer" for the optimizer step's
 * (`optimizer`: inOptimizer), none for the untracked remainder, which no phase claimed.
 */
export function phaseTimes(node, optimizer) {
  if (optimizer) return [["optimizer", nodeTime(node)]];
  if (node.kind === NODE_KIND.UNTRACKED) return [];
  return [["forward", node.forward_ms || 0], ["backward", node.backward_ms ?? null]];
}

/**
 * The short name shown for a node: the label a view node carries ("addmm × 49", group.js),
 * a module's attribute name ("conv1"; "layer2.0" when the last part is a ModuleList/Sequential
 * index, which alone says nothing), an op's name, the root's class. The class name (node.name)
 * stays available for tooltips.
 */
export function nodeLabel(node) {
  if (node.label) return node.label;
  if (node.kind !== NODE_KIND.MODULE || !node.path) return node.name || "model";
  const parts = node.path.split(".");
  const last = parts[parts.length - 1];
  return /^\d+$/.test(last) && parts.length > 1 ? parts.slice(-2).join(".") : last;
}

/** Map every path to its node and its parent, once per report (drilling is then O(depth)). */
export function indexTree(root) {
  const byPath = new Map();
  const parent = new Map();
  const stack = [root];
  while (stack.length) {
    const node = stack.pop();
    byPath.set(node.path, node);
    for (const child of node.children || []) {
      parent.set(child.path, node);
      stack.push(child);
    }
  }
  return { root, byPath, parentOf: (path) => parent.get(path) ?? null };
}

/** Modules (and the optimizer phase) with children can be opened; ops are leaves. */
export function isDrillable(node) {
  return Boolean(node) && node.kind !== NODE_KIND.OP && (node.children || []).length > 0;
}

/** The drill path: a stack from the root to the module being looked at. */
export class Navigator {
  constructor(index) {
    this.index = index;
    this.stack = [index.root];
  }

  get current() {
    return this.stack[this.stack.length - 1];
  }

  get atTop() {
    return this.stack.length === 1;
  }

  /** Open the node at `path` (any descendant, not only a child); false if it is a leaf. */
  drill(path) {
    const node = this.index.byPath.get(path);
    if (!isDrillable(node)) return false;
    const chain = [];
    for (let n = node; n; n = this.index.parentOf(n.path)) chain.push(n);
    this.stack = chain.reverse();
    return true;
  }

  back() {
    if (this.atTop) return false;
    this.stack.pop();
    return true;
  }

  top() {
    const moved = !this.atTop;
    this.stack = [this.index.root];
    return moved;
  }

  /** Jump to a breadcrumb (0 = root). */
  goTo(depth) {
    if (depth < 0 || depth >= this.stack.length - 1) return false;
    this.stack = this.stack.slice(0, depth + 1);
    return true;
  }

  crumbs() {
    return this.stack.map((node, depth) => ({ depth, path: node.path, name: nodeLabel(node) }));
  }
}

// A remainder smaller than this share of the level is rounding noise, not a finding.
const REMAINDER_TOLERANCE = 1e-3;

// A part under SMALL_SHARE of its bar is too thin to point at. A few of them are drawn anyway,
// each at the bar's minimum width (widget.css); more than MAX_SMALL in one run of segments (a
// level's times, or one memory category's parts) become one "other (N small)" segment whose
// tooltip lists them.
const SMALL_SHARE = 0.01;
const MAX_SMALL = 8;
const MERGEABLE = new Set([NODE_KIND.MODULE, NODE_KIND.OP, VIEW_KIND.GROUP]);

function isNoise(value, total) {
  return Math.abs(value) <= REMAINDER_TOLERANCE * Math.abs(total) || value === 0;
}

function segment(node, category, value, extra = {}) {
  return {
    key: `${category}:${node.path}`,
    path: node.path,
    name: node.kind ? nodeLabel(node) : node.name,
    typeName: node.name,
    kind: node.kind,
    category,
    base: value,
    value,
    frames: node.frames || [],
    node,
    ...extra,
  };
}

function synthetic(path, name, kind, category, value, extra = {}) {
  return segment({ path, name, kind, frames: [] }, category, value, { node: null, ...extra });
}

/** Largest first; ties keep the tree's order (Array.prototype.sort is stable). */
export function sortDescending(segments) {
  return segments.sort((a, b) => b.base - a.base);
}

const positiveSum = (segs) => sum(segs, (s) => Math.max(0, s.base));

/**
 * `segs` (sorted) with its small parts merged into one "other" segment at the end when there
 * are more than MAX_SMALL of them; the merged segments are its `parts`. Only tree nodes merge:
 * remainders and the nodes that stand for a category keep their own segment.
 */
function mergeSmall(segs, positive, level, category, extra = {}) {
  const small = segs.filter((s) => MERGEABLE.has(s.kind) && s.base >= 0 && s.base < SMALL_SHARE * positive);
  if (small.length <= MAX_SMALL) return segs;
  const merged = new Set(small);
  const path = `${level.path ? `${level.path}/` : ""}(other ${category})`;
  const other = synthetic(path, `other (${small.length} small)`, VIEW_KIND.OTHER, category, sum(small, (s) => s.base), { ...extra, parts: small });
  return [...segs.filter((s) => !merged.has(s)), other];
}

/**
 * The time segments of one drill level: its children by forward+backward time, largest first.
 * At the root, untracked time (iteration time minus the instrumented operations) is a segment
 * of its own when the tree has no untracked node; it may be negative and stays negative.
 * Deeper, a module whose children do not add up to its own time gets an "unattributed"
 * remainder, so the segments always sum to the level's total. Many small parts are one
 * "other" segment (mergeSmall).
 */
export function timeSegments(report, index, node) {
  const children = node.children || [];
  // Every time segment says whether it is the optimizer step's (applyScale keeps its time).
  const optimizer = inOptimizer(index, node);
  const segs = children.filter((c) => nodeTime(c) !== 0)
    .map((c) => segment(c, TIME, nodeTime(c), { optimizer: optimizer || c.kind === NODE_KIND.OPTIMIZER }));
  const isRoot = node === index.root;
  if (isRoot) {
    const untracked = Number(report.untracked_ms) || 0;
    if (untracked !== 0 && !children.some((c) => c.kind === NODE_KIND.UNTRACKED)) {
      segs.push(synthetic("(untracked)", "untracked", NODE_KIND.UNTRACKED, TIME, untracked, { optimizer: false }));
    }
  } else {
    const rest = nodeTime(node) - sum(segs, (s) => s.base);
    if (!isNoise(rest, nodeTime(node))) {
      segs.push(synthetic(`${node.path}#rest`, "unattributed", NODE_KIND.UNTRACKED, TIME, rest, { optimizer }));
    }
  }
  // The optimizer node never merges (not MERGEABLE), so what merges is of the level's kind.
  return finish(mergeSmall(sortDescending(segs), positiveSum(segs), node, TIME, { optimizer }));
}

/**
 * The memory segments of one drill level, drawn from the report's categories in their order:
 * first one group per category split over the tree (one segment per child holding bytes of
 * it; bytes the node holds beyond its children, such as a module's own parameters, are its
 * "(own)" segment), then, at the root only, one segment per other category (the node that
 * stands for it, such as the optimizer, or a segment of its own), together; that node opened
 * shows the categories it stands for (its ops hold none of their bytes). Each group is
 * sorted largest first, its many small parts merged (mergeSmall); negative values (untracked
 * bytes) stay negative, never clamped. At the root a child that stands for a category is drawn
 * as that category only. A memory segment carries its drawn category (categories.js) as `spec`.
 */
export function memorySegments(report, index, node) {
  const isRoot = node === index.root;
  const children = node.children || [];
  const categories = drawnCategories(report);
  const standing = new Set(categories.map((c) => c.nodeKind).filter(Boolean));
  const parts = isRoot ? children.filter((c) => !standing.has(c.kind)) : children;
  const groups = [];
  const single = [];
  const sampled = isRoot ? sampledCategories(report) : new Set();
  for (const category of categories) {
    // none at the measured peak, some at a sample's: drawn whole, at the bytes a drag predicts
    if (category.bytes === 0 && category.members.some((m) => sampled.has(m.key))) single.push(categorySegment(category, [], true));
    else if (splitsOverTree(category)) groups.push({ category, segs: sortDescending(splitOverTree(category, node, children, parts)) });
    else if (category.bytes === 0) continue;
    else if (isRoot) single.push(categorySegment(category, children));
    // the node that stood for it at the root (the optimizer for its state), opened: it holds
    // those bytes itself, not its ops, so they are its level's memory
    else if (category.nodeKind && category.nodeKind === node.kind) single.push(categorySegment(category, []));
  }
  const positive = positiveSum([...groups.flatMap((g) => g.segs), ...single]);
  const merged = groups.flatMap(({ category, segs }) => mergeSmall(segs, positive, node, category.key, { spec: category }));
  return finish([...merged, ...sortDescending(single)]);
}

function splitOverTree(category, node, children, parts) {
  const bytes = (n) => sum(category.nodeFields, (field) => Number(n[field]) || 0);
  const extra = { spec: category };
  const segs = parts.filter((c) => bytes(c) !== 0).map((c) => segment(c, category.key, bytes(c), extra));
  const own = bytes(node) - sum(children, bytes);
  if (own !== 0) segs.push(segment(node, category.key, own, { ...extra, name: `${nodeLabel(node)} (own)`, own: true }));
  return segs;
}

/**
 * The segment of a category drawn as one; `measured` keeps its measured bytes, which a
 * remainder's base does not (applyScale). `whole`: a category the measured peak holds none
 * of, drawn at the bytes predicted for it (its parts over the tree were not measured).
 */
function categorySegment(category, children, whole = false) {
  const node = category.nodeKind ? children.find((c) => c.kind === category.nodeKind) : null;
  // the remainder is named as the legend names it ("other"), not by the node that stands for
  // it ("untracked", the name of the time no op holds)
  const extra = { spec: category, measured: category.bytes, whole, ...(category.remainder ? { name: category.label } : {}) };
  return node ? segment(node, category.key, category.bytes, extra)
    : synthetic(`(${category.key})`, category.label, category.nodeKind, category.key, category.bytes, extra);
}

function finish(segs) {
  return { segments: segs, total: sum(segs, (s) => s.value), positive: sum(segs, (s) => Math.max(0, s.value)) };
}

/**
 * How measured values turn into predicted ones at `batch`: the optimizer step's time stays (it
 * touches parameters only: optimizerTimeFactor 1) and the rest of the iteration's time takes
 * what is left of R(x) (timeFactor), so the root level sums to the model's iteration time;
 * when the optimizer holds all of either time, every time scales with R(x)/iteration_ms. A
 * category follows its bytes at the samples (`categoriesAt`: of the phase the peak is
 * predicted in), or, in reports without them, grows with x / measured batch
 * when it grows with the batch (`activationFactor`) and stays otherwise; the remainder category
 * is what the memory model predicts beyond all the others. At the measured batch size the
 * measurement is shown as is.
 */
export function scaleFor(report, predictor, batch) {
  const measured = Number(report.batch_size);
  if (!predictor || !predictor.canManipulate || batch === measured || !(measured > 0)) {
    return { batch: measured, predicted: false, timeFactor: 1, optimizerTimeFactor: 1, activationFactor: 1, categoryFactors: {}, categoryBytes: {}, peakBytes: null };
  }
  const iterationMs = Number(report.iteration_ms);
  const predictedMs = predictor.predictIterationMs(batch);
  const optimizerMs = optimizerTime(report.tree);
  const rest = [predictedMs - optimizerMs, iterationMs - optimizerMs];
  const single = iterationMs > 0 ? predictedMs / iterationMs : 1;
  const split = rest.every((ms) => ms > 0);
  const peakBytes = predictor.predictPeakBytes(batch);
  const categoryBytes = categoriesAt(report, batch, predictor.peakPhaseAt(batch), peakBytes);
  return {
    batch,
    predicted: true,
    timeFactor: split ? rest[0] / rest[1] : single,
    optimizerTimeFactor: split ? 1 : single,
    activationFactor: batch / measured,
    categoryFactors: Object.fromEntries((report.categories || [])
      .filter((c) => !c.remainder && Number(c.bytes) > 0 && c.key in categoryBytes)
      .map((c) => [c.key, categoryBytes[c.key] / Number(c.bytes)])),
    categoryBytes,
    peakBytes,
  };
}

/** The measured time of the optimizer step(s) in the tree, ms. */
function optimizerTime(root) {
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const node = stack.pop();
    if (node.kind === NODE_KIND.OPTIMIZER) total += nodeTime(node);
    else stack.push(...(node.children || []));
  }
  return total;
}

/**
 * `ms` measured, of which `optimizerMs` in the optimizer step, at a scaleFor() scale: the one
 * rule for every time drawn (segments, their tooltips, code lines).
 */
export function scaledTime(scale, ms, optimizerMs = 0) {
  return (ms - optimizerMs) * scale.timeFactor + optimizerMs * scale.optimizerTimeFactor;
}

/**
 * Apply a scaleFor() result to a level's segments in place; returns the level with its new
 * totals. A segment is drawn by the sign of its `base` (in the bar when positive, as a chip
 * beside it when negative). A remainder is what is left at the current scale, so its base
 * follows its value and it is drawn one way, measured or predicted; when its sign changed,
 * `level.relayout` says the level must be drawn anew.
 */
export function applyScale(level, scale) {
  let others = 0;
  for (const s of level.segments) {
    const factor = scale.categoryFactors?.[s.category];
    if (s.category === TIME) s.value = scaledTime(scale, s.base, s.optimizer ? s.base : 0);
    else if (s.whole && !s.spec?.remainder) s.value = sum(s.spec.members, (m) => scale.categoryBytes?.[m.key] ?? 0);
    else if (factor !== undefined) s.value = s.base * factor;
    else if (s.spec?.growsWithBatch) s.value = s.base * scale.activationFactor;
    else if (!s.spec?.remainder) s.value = s.base;
    if (s.category !== TIME && !s.spec?.remainder) others += s.value;
  }
  level.relayout = false;
  for (const s of level.segments) {
    if (!s.spec?.remainder) continue;
    s.value = scale.peakBytes === null ? s.measured : scale.peakBytes - others;
    if (s.whole && isNoise(s.value, scale.peakBytes ?? 0)) s.value = 0; // none was measured
    if ((s.value < 0) !== (s.base < 0)) level.relayout = true;
    s.base = s.value;
  }
  level.total = sum(level.segments, (s) => s.value);
  level.positive = sum(level.segments, (s) => Math.max(0, s.value));
  return level;
}
