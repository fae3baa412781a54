// The edit protocol between the skyline widget and this extension, free of any JupyterLab import.
//
// The widget dispatches, from its own DOM node (inside a cell's output area),
//   new CustomEvent(EDIT_EVENT, {bubbles: true, cancelable: true, composed: true, detail})
// with detail = {cellId, start, end, text, expected}: replace source[start:end] of the cell
// whose nbformat id is cellId by text, provided that slice still reads `expected`. Offsets are
// JavaScript string offsets (UTF-16 code units) into the cell's current source.
//
// The extension answers synchronously, before dispatchEvent returns:
//   * it calls preventDefault() whenever it found the cell, and sets detail.result to
//     {ok: true, message} (edited, one undo step) or {ok: false, message} (refused, untouched);
//   * when no open notebook holds the cell it leaves the event alone (the widget falls back to
//     its other ways of editing) and still sets detail.result = {ok: false, message}.

//
// Before editing, the widget may ask for the cell's current text with a READ_EVENT whose
// detail is {cellId}; the extension calls preventDefault() and sets detail.source when it
// found the cell (so the literal can be re-located after the user typed in the cell).

//
// A cell that ran before `%load_ext skyline_nb` is known to the kernel by its text only, not its
// id. The widget then asks for the id with a FIND_EVENT whose detail is {source} (the cell's text
// as it ran): the extension calls preventDefault() and sets detail.cellId when exactly one cell
// holds that text, else detail.error (none: the cell changed since it ran; several: ambiguous).

export const EDIT_EVENT = "skyline-edit-source";
export const READ_EVENT = "skyline-read-source";
export const FIND_EVENT = "skyline-find-cell";

// Why `detail` cannot be applied to a source of length `length`, or "" when it can.
export function invalidDetail(detail, length) {
  if (!detail || typeof detail !== "object") return "the edit has no detail";
  const { cellId, start, end, text, expected } = detail;
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

// Apply detail to a shared cell model (JupyterLab's YCodeCell: getSource / updateSource).
// Returns {ok, message}; the source is left untouched unless ok.
export function applyEdit(cell, detail) {
  const source = cell.getSource();
  const invalid = invalidDetail(detail, source.length);
  if (invalid) return { ok: false, message: invalid };
  const { start, end, text, expected } = detail;
  const found = source.slice(start, end);
  if (found !== expected) {
    return {
      ok: false,
      message:
        `The cell changed since it was profiled: expected ${JSON.stringify(expected)} ` +
        `at ${start}-${end}, found ${JSON.stringify(found)}. Re-run the cell and try again.`,
    };
  }
  // updateSource is one Yjs transaction; stopping the undo manager's capture around it keeps
  // it one undo step of its own (Yjs merges changes less than 500 ms apart: two quick drags,
  // or a drag right after typing, would otherwise undo together).
  stopCapturing(cell);
  cell.updateSource(start, end, text);
  stopCapturing(cell);
  return { ok: true, message: `Replaced ${JSON.stringify(expected)} by ${JSON.stringify(text)}.` };
}

function stopCapturing(cell) {
  const undo = cell.undoManager;
  if (undo && typeof undo.stopCapturing === "function") undo.stopCapturing();
}

// The shared notebook model of a main-area widget, if it is a notebook panel (duck-typed, so
// no @jupyterlab import is needed: NotebookPanel.content is a Notebook whose model has one).
function notebookModelOf(widget) {
  const shared = widget?.content?.model?.sharedModel;
  return shared && Array.isArray(shared.cells) ? shared : null;
}

// The cells a widget at `target` may edit: those of the notebook whose DOM node contains it (the
// widget's own notebook), else those of every open notebook (the widget may be shown in a
// detached output view); null when no notebook is open.
function candidateCells(widgets, target) {
  const notebooks = [];
  for (const widget of widgets) {
    const model = notebookModelOf(widget);
    if (!model) continue;
    if (target instanceof Node && widget.node?.contains(target)) return model.cells;
    if (!notebooks.includes(model)) notebooks.push(model);
  }
  return notebooks.length ? notebooks.flatMap((model) => model.cells) : null;
}

// Find the shared cell with `cellId` among the candidate cells; null when none or several
// (the same id in two open notebooks) match.
export function findCell(widgets, target, cellId) {
  const matches = (candidateCells(widgets, target) ?? []).filter((cell) => cell.id === cellId);
  return matches.length === 1 ? matches[0] : null;
}

const textOf = (cell) => (typeof cell.getSource === "function" ? cell.getSource() : cell.source);

// The one cell of `cells` whose text is exactly `source` (the code that defined the input
// provider, as it ran), as {cell}; else {error} saying why no cell is edited. Exact and unique
// or nothing: a near match may be another cell, or one the user changed since it ran.
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

// The cell a widget at `target` means by the text `source`: {cell} or {error}; null when no
// notebook is open.
export function findCellBySource(widgets, target, source) {
  const cells = candidateCells(widgets, target);
  return cells ? cellWithSource(cells, source) : null;
}
