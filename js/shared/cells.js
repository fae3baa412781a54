// Functions of JupyterLab's shared cell models (YCodeCell: id, getSource(), updateSource()),
// used by both bundles: the companion extension on the cells of the notebook it finds, and the
// widget on the cells of the widget manager's shared model when no extension answers. No
// JupyterLab import: cells are duck-typed.

/** A cell's current text (a YCodeCell's getSource(), or a plain `source`). */
export const textOf = (cell) => (typeof cell.getSource === "function" ? cell.getSource() : cell.source);

/**
 * Why `edit` ({cellId, start, end, expected, text}) cannot be applied to a source of `length`
 * UTF-16 code units (length unknown: undefined), or "" when it can.
 */
export function invalidEdit(edit, length) {
  if (!edit || typeof edit !== "object") return "the edit has no detail";
  const { cellId, start, end, text, expected } = edit;
  if (typeof cellId !== "string" || cellId === "") return "the edit names no cell id";
  if (typeof text !== "string" || typeof expected !== "string") {
    return "the edit needs string `text` and `expected`";
  }
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start) {
    return `the edit span [${start}, ${end}) is not a valid range`;
  }
  if (length !== undefined && end > length) {
    return `the edit span [${start}, ${end}) runs past the end of the cell (${length} characters)`;
  }
  return "";
}

/**
 * THE writer of the batch-size literal in the front end: replace [start, end) of the cell by
 * `text`, exactly as the kernel planned it, provided that span still reads `expected` (the user
 * may have typed since the kernel looked). Returns {ok, message}; the cell is untouched unless ok.
 *
 * updateSource is one Yjs transaction; stopping the undo manager's capture around it keeps it one
 * undo step of its own (Yjs merges changes less than 500 ms apart: two quick drags, or a drag
 * right after typing, would otherwise undo together).
 */
export function writeEdit(cell, edit) {
  const source = textOf(cell);
  const invalid = invalidEdit(edit, typeof source === "string" ? source.length : undefined);
  if (invalid) return { ok: false, message: invalid };
  if (typeof source !== "string" || typeof cell.updateSource !== "function") {
    return { ok: false, message: "this cell cannot be edited from here" };
  }
  const { start, end, text, expected } = edit;
  const found = source.slice(start, end);
  if (found !== expected) {
    return {
      ok: false,
      message:
        `The cell changed since the batch size was located: expected ${JSON.stringify(expected)} ` +
        `at ${start}-${end}, found ${JSON.stringify(found)}. Drag again.`,
    };
  }
  stopCapturing(cell);
  cell.updateSource(start, end, text);
  stopCapturing(cell);
  return { ok: true, message: `Replaced ${JSON.stringify(expected)} by ${JSON.stringify(text)}.` };
}

function stopCapturing(cell) {
  const undo = cell.undoManager;
  if (undo && typeof undo.stopCapturing === "function") undo.stopCapturing();
}

/**
 * The one cell of `cells` whose text is exactly `source` (the code that defined the input
 * provider, as it ran), as {cell}; else {error} saying why no cell is edited. Exact and unique
 * or nothing: a near match may be another cell, or one the user changed since it ran.
 */
export function cellWithSource(cells, source) {
  const hits = cells.filter((cell) => cell && textOf(cell) === source);
  if (hits.length === 1) return { cell: hits[0] };
  if (hits.length > 1) {
    return {
      error: `${hits.length} cells hold the code that defined the input provider, so which one ` +
        "to edit is ambiguous",
    };
  }
  return {
    error: "the cell that defined the input provider changed since it ran (no cell holds its " +
      "code as it ran); run it again, then drag",
  };
}
