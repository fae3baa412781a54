// Finding the cell a widget means among the notebooks open in JupyterLab / Notebook 7, from the
// app shell's main-area widgets (duck-typed: a NotebookPanel's content is a Notebook whose model
// has a sharedModel with cells), so the extension needs no @jupyterlab import.
import { cellWithSource } from "../shared/cells.js";

// The shared notebook model of a main-area widget, if it is a notebook panel.
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

// The shared cell with `cellId` among the candidate cells; null when none or several (the same
// id in two open notebooks) match.
export function findCell(widgets, target, cellId) {
  const matches = (candidateCells(widgets, target) ?? []).filter((cell) => cell.id === cellId);
  return matches.length === 1 ? matches[0] : null;
}

// The cell a widget at `target` means by the text `source`: {cell} or {error}; null when no
// notebook is open.
export function findCellBySource(widgets, target, source) {
  const cells = candidateCells(widgets, target);
  return cells ? cellWithSource(cells, source) : null;
}
