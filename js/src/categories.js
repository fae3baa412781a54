// The memory categories a report carries (report.categories, defined once in
// skyline_nb/categories.py, where each descriptor field is explained). Every memory view reads
// them from here; nothing in the widget names a category, so a category added in Python is
// drawn, labelled, styled and scaled with no change here.

const COLOR = /^#[0-9a-fA-F]{6}$/;

/** A colour from the report, only if it is `#rrggbb` (it lands in a style property). */
export function safeColor(value) {
  return typeof value === "string" && COLOR.test(value) ? value : null;
}

/**
 * The categories the memory bar draws, in the report's order. A category shown with another
 * (`shown_with`) is not drawn on its own: it joins that category's segments, and the drawn
 * entry names both ("weights + grads"). Each entry: {key, label, members, nodeFields,
 * parameterFields, bytes, growsWithBatch, remainder, nodeKind, color, texture}.
 */
export function drawnCategories(report) {
  const all = Array.isArray(report?.categories) ? report.categories : [];
  return all.filter((c) => !c.shown_with).map((c) => {
    const members = [c, ...all.filter((m) => m.shown_with === c.key)];
    return {
      key: c.key,
      label: members.map((m) => m.label).join(" + "),
      members,
      nodeFields: members.map((m) => m.node_field).filter(Boolean),
      parameterFields: members.map((m) => m.parameter_field).filter(Boolean),
      bytes: members.reduce((acc, m) => acc + (Number(m.bytes) || 0), 0),
      growsWithBatch: Boolean(c.grows_with_batch),
      remainder: Boolean(c.remainder),
      nodeKind: c.node_kind ?? null,
      color: safeColor(c.color),
      texture: c.texture || "plain",
    };
  });
}

/** A category split over the tree is coloured by module; the others have their own colour. */
export const splitsOverTree = (category) => category.nodeFields.length > 0;
