// The breakdown tree: indexing, drill-down navigation, and the segments of one drill level.
// Pure data (no DOM) so navigation, sorting, untracked handling and scaling are unit-tested
// without a browser.

/** Forward plus backward time of a node (backward_ms is null when nothing ran backward). */
export function nodeTime(node) {
  return (node.forward_ms || 0) + (node.backward_ms ?? 0);
}

/** Parameter memory charged to a node: the weights and their gradients. */
export function nodeWeightBytes(node) {
  return (node.weight_bytes || 0) + (node.grad_bytes || 0);
}

/**
 * The short name shown for a node: a module's attribute name ("conv1"; "layer2.0" when the
 * last part is a ModuleList/Sequential index, which alone says nothing), an op's name, the
 * root's class. The class name (node.name) stays available for tooltips.
 */
export function nodeLabel(node) {
  if (node.kind !== "module" || !node.path) return node.name || "model";
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
  return Boolean(node) && node.kind !== "op" && (node.children || []).length > 0;
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

function synthetic(path, name, kind, category, value) {
  return segment({ path, name, kind, frames: [] }, category, value, { node: null });
}

/** Largest first; ties keep the tree's order (Array.prototype.sort is stable). */
export function sortDescending(segments) {
  return segments.sort((a, b) => b.base - a.base);
}

const sum = (items, f) => items.reduce((acc, item) => acc + f(item), 0);

/**
 * The time segments of one drill level: its children by forward+backward time, largest first.
 * At the root, untracked time (iteration time minus the instrumented operations) is a segment
 * of its own when the tree has no untracked node; it may be negative and stays negative.
 * Deeper, a module whose children do not add up to its own time gets an "unattributed"
 * remainder, so the segments always sum to the level's total.
 */
export function timeSegments(report, index, node) {
  const children = node.children || [];
  const segs = children.filter((c) => nodeTime(c) !== 0).map((c) => segment(c, "time", nodeTime(c)));
  const isRoot = node === index.root;
  if (isRoot) {
    const untracked = Number(report.untracked_ms) || 0;
    if (untracked !== 0 && !children.some((c) => c.kind === "untracked")) {
      segs.push(synthetic("(untracked)", "untracked", "untracked", "time", untracked));
    }
  } else {
    const rest = nodeTime(node) - sum(segs, (s) => s.base);
    if (!isNoise(rest, nodeTime(node))) {
      segs.push(synthetic(`${node.path}#rest`, "unattributed", "untracked", "time", rest));
    }
  }
  return finish(sortDescending(segs));
}

/**
 * The memory segments of one drill level, in three groups shown left to right: weights
 * (parameters + gradients, constant in the batch size), activations (proportional to the batch
 * size), then what is neither: optimizer state and untracked bytes (root only: peak minus
 * everything categorized; may be negative, never clamped). Each group is sorted largest first.
 */
export function memorySegments(report, index, node) {
  const children = node.children || [];
  const isRoot = node === index.root;
  const weights = children.filter((c) => nodeWeightBytes(c) > 0)
    .map((c) => segment(c, "weights", nodeWeightBytes(c)));
  const ownWeights = nodeWeightBytes(node) - sum(weights, (s) => s.base);
  if (ownWeights > 0) {
    // Parameters the module holds itself (a leaf Linear's weight): charged to the module.
    weights.push(segment(node, "weights", ownWeights, { name: `${nodeLabel(node)} (own)` }));
  }
  // At the root an "untracked" child carries the bytes nobody claimed (its activation_bytes);
  // they are not activations and do not scale with the batch, so they go to the third group.
  const untrackedChild = isRoot ? children.find((c) => c.kind === "untracked") : null;
  const activations = children.filter((c) => c !== untrackedChild && (c.activation_bytes || 0) !== 0)
    .map((c) => segment(c, "activations", c.activation_bytes));
  if (!isRoot) {
    const rest = (node.activation_bytes || 0) - sum(activations, (s) => s.base);
    if (!isNoise(rest, node.activation_bytes || 0)) {
      activations.push(synthetic(`${node.path}#rest`, "unattributed", "untracked", "activations", rest));
    }
  }
  const other = [];
  if (isRoot) {
    const cat = report.categories || {};
    const optimizer = Number(cat.optimizer) || 0;
    if (optimizer !== 0) {
      const optNode = children.find((c) => c.kind === "optimizer");
      other.push(optNode ? segment(optNode, "optimizer", optimizer)
        : synthetic("(optimizer)", "optimizer state", "optimizer", "optimizer", optimizer));
    }
    const untracked = cat.untracked !== undefined ? Number(cat.untracked)
      : untrackedChild ? untrackedChild.activation_bytes || 0
        : (Number(report.peak_bytes) || 0) - sum(weights, (s) => s.base)
          - sum(activations, (s) => s.base) - optimizer;
    if (untracked !== 0) {
      other.push(untrackedChild ? segment(untrackedChild, "untracked", untracked)
        : synthetic("(untracked)", "untracked", "untracked", "untracked", untracked));
    }
  }
  return finish([...sortDescending(weights), ...sortDescending(activations), ...sortDescending(other)]);
}

function finish(segs) {
  return { segments: segs, total: sum(segs, (s) => s.value), positive: sum(segs, (s) => Math.max(0, s.value)) };
}

/**
 * How measured values turn into predicted ones at `batch`: times scale with R(x)/iteration_ms
 * (so the root level sums to the model's iteration time), activations with x / measured batch
 * (weights and optimizer state do not depend on the batch), and at the root the untracked bytes
 * are what the memory model predicts beyond everything categorized. At the measured batch size
 * the measurement is shown as is.
 */
export function scaleFor(report, predictor, batch) {
  const measured = Number(report.batch_size);
  if (!predictor || !predictor.canManipulate || batch === measured || !(measured > 0)) {
    return { batch: measured, predicted: false, timeFactor: 1, activationFactor: 1, peakBytes: null };
  }
  const iterationMs = Number(report.iteration_ms);
  return {
    batch,
    predicted: true,
    timeFactor: iterationMs > 0 ? predictor.predictIterationMs(batch) / iterationMs : 1,
    activationFactor: batch / measured,
    peakBytes: predictor.predictPeakBytes(batch),
  };
}

/** Apply a scaleFor() result to a level's segments in place; returns the new totals. */
export function applyScale(level, scale) {
  let others = 0;
  for (const s of level.segments) {
    if (s.category === "time") s.value = s.base * scale.timeFactor;
    else if (s.category === "activations") s.value = s.base * scale.activationFactor;
    else s.value = s.base;
    if (s.category !== "time" && s.category !== "untracked") others += s.value;
  }
  for (const s of level.segments) {
    if (s.category === "untracked" && scale.peakBytes !== null) s.value = scale.peakBytes - others;
  }
  level.total = sum(level.segments, (s) => s.value);
  level.positive = sum(level.segments, (s) => Math.max(0, s.value));
  return level;
}
