// Repeated calls of one op inside one module, drawn as one segment ("addmm × 49"). Grouping is a
// view concern: the report keeps every call as its own node (and the exports keep them), while
// the widget draws the tree groupRepeatedOps() returns. A group opens like a module, so its
// calls are one double-click away, with Back and Top as for any level. Pure data, no DOM.

import { NODE_KIND, nodeTime, VIEW_KIND } from "./tree.js";

const CALL_NUMBER = /#(\d+)$/; // op paths end in their call number: "gru/addmm#7"
const MAX_PARTS_LISTED = 6;

/** "addmm #7": a call of a group, named by its call number (the op's name alone repeats). */
function callLabel(node) {
  const match = CALL_NUMBER.exec(node.path);
  return match ? `${node.name} #${match[1]}` : node.name;
}

/** The frames every call shares, or none when the calls come from different lines. */
function sharedFrames(calls) {
  const first = JSON.stringify(calls[0].frames || []);
  return calls.every((c) => JSON.stringify(c.frames || []) === first) ? calls[0].frames || [] : [];
}

/**
 * One group node for the calls (in tree order) of one op in one module: their times and the
 * node fields in `fields` summed (backward_ms stays null when no call ran backward), the
 * calls as its children, its path the calls' path with "#*" for the call number
 * ("gru/addmm#*").
 */
function groupNode(calls, fields) {
  const first = calls[0];
  const total = (field) => calls.reduce((acc, c) => acc + (Number(c[field]) || 0), 0);
  const ranBackward = calls.some((c) => c.backward_ms !== null && c.backward_ms !== undefined);
  const node = {
    kind: VIEW_KIND.GROUP,
    name: first.name,
    label: `${first.name} \u00d7 ${calls.length}`,
    path: `${first.path.replace(CALL_NUMBER, "")}#*`,
    forward_ms: total("forward_ms"),
    backward_ms: ranBackward ? total("backward_ms") : null,
    frames: sharedFrames(calls),
    children: calls.map((c) => ({ ...c, label: callLabel(c) })),
  };
  for (const field of fields) node[field] = total(field);
  return node;
}

/**
 * The tree the widget draws: `root` where, in every node, the op children that share a name
 * are one group node, at the place of the first call; an op called once stays as it is.
 * `fields` are the node fields to sum (the memory categories' node fields). The report's own
 * nodes are never modified: nodes that change are copies; a node whose children are not a list
 * is left as it is, for the level builders to report.
 */
export function groupRepeatedOps(root, fields) {
  const children = root.children;
  if (!Array.isArray(children) || !children.length) return root;
  const calls = new Map(); // op name -> its calls in tree order
  for (const c of children) {
    if (c.kind !== NODE_KIND.OP) continue;
    if (!calls.has(c.name)) calls.set(c.name, []);
    calls.get(c.name).push(c);
  }
  const drawn = [];
  for (const c of children) {
    const same = c.kind === NODE_KIND.OP ? calls.get(c.name) : null;
    if (!same) drawn.push(groupRepeatedOps(c, fields));
    else if (same.length === 1) drawn.push(c);
    else if (same[0] === c) drawn.push(groupNode(same, fields));
  }
  return { ...root, children: drawn };
}

/**
 * The per-call values of a group segment at the segment's current scale: each call's time, or
 * its bytes of the segment's memory category. {count, mean, min, max}.
 */
export function callSpread(segment) {
  const factor = segment.base ? segment.value / segment.base : 1;
  const fields = segment.spec?.nodeFields;
  const valueOf = fields ? (n) => fields.reduce((acc, f) => acc + (Number(n[f]) || 0), 0) : nodeTime;
  const values = segment.node.children.map((c) => valueOf(c) * factor);
  return {
    count: values.length,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/**
 * The tooltip lines ({text, class?}) a grouped segment adds: for a group, its calls' mean and
 * spread (min–max); for "other", the parts it holds, largest first. `format` formats a value
 * of the segment's bar. None for other segments.
 */
export function groupTooltipLines(segment, format) {
  if (segment.kind === VIEW_KIND.GROUP && segment.node) {
    const { count, mean, min, max } = callSpread(segment);
    return [
      { class: "sk-tooltip-value", text: `${count} calls \u00b7 mean ${format(mean)} \u00b7 min ${format(min)} \u2013 max ${format(max)}` },
    ];
  }
  if (segment.kind === VIEW_KIND.OTHER && segment.parts) {
    const factor = segment.base ? segment.value / segment.base : 1;
    const listed = segment.parts.slice(0, MAX_PARTS_LISTED);
    const more = segment.parts.length - listed.length;
    return [
      ...listed.map((p) => ({ class: "sk-tooltip-part", text: `${p.name}  ${format(p.base * factor)}` })),
      ...(more > 0 ? [{ class: "sk-tooltip-note", text: `and ${more} more` }] : []),
    ];
  }
  return [];
}
