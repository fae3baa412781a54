// skyline-nb companion plugin for JupyterLab 4 and Notebook 7: answers the skyline widget's
// events (js/shared/protocol.js) on the notebook's cells, by cell id, and applies the kernel's
// batch-size edits with the one front-end writer (js/shared/cells.js `writeEdit`); interrupts
// and watches the kernel of the widget's own notebook. No runtime dependency: the app is
// reached through `app.shell`.
import { invalidEdit, textOf, writeEdit } from "../shared/cells.js";
import { EVENTS } from "../shared/protocol.js";
import { findCell, findCellBySource } from "./edit.js";
import { interrupt, panelOf, statusOf, watch } from "./kernel.js";

function mainAreaWidgets(shell) {
  const widgets = typeof shell.widgets === "function" ? [...shell.widgets("main")] : [];
  if (shell.currentWidget && !widgets.includes(shell.currentWidget)) {
    widgets.push(shell.currentWidget);
  }
  return widgets;
}

function onEditSource(app, event) {
  if (event.defaultPrevented) return; // another copy of this extension already answered
  const detail = event.detail;
  if (!detail || typeof detail !== "object") return;
  const invalid = invalidEdit(detail);
  if (invalid) {
    event.preventDefault();
    detail.result = { ok: false, message: invalid };
    return;
  }
  const cell = findCell(mainAreaWidgets(app.shell), event.target, detail.cellId);
  if (!cell) {
    detail.result = { ok: false, message: `No open notebook has a cell with id ${detail.cellId}.` };
    return;
  }
  event.preventDefault();
  try {
    detail.result = writeEdit(cell, detail);
  } catch (error) {
    detail.result = { ok: false, message: `The edit failed: ${error?.message ?? error}` };
  }
}

// A listener that answers a request event (detail[key] a string) when `answer` finds what was
// asked: it calls preventDefault() and puts the answer's fields into the detail. Unanswered
// events go on to the widget's other ways (another copy of this extension, the shared model).
function answering(app, key, answer) {
  return (event) => {
    if (event.defaultPrevented) return;
    const detail = event.detail;
    if (!detail || typeof detail !== "object" || typeof detail[key] !== "string") return;
    const fields = answer(mainAreaWidgets(app.shell), event.target, detail[key]);
    if (!fields) return;
    event.preventDefault();
    Object.assign(detail, fields);
  };
}

// A read request gets the cell's current text, which the widget sends to the kernel to locate
// the literal in (by AST) when the user typed since profiling.
function readSource(widgets, target, cellId) {
  const cell = findCell(widgets, target, cellId);
  return cell && { source: textOf(cell) };
}

// A find request gets the id of the one cell whose text is exactly the code that ran (a cell that
// ran before `%load_ext`, whose id the kernel never heard), or why there is none.
function findBySource(widgets, target, source) {
  const found = findCellBySource(widgets, target, source);
  if (!found) return null;
  return found.cell ? { cellId: found.cell.id } : { error: found.error };
}

// The widget's own notebook panel for a kernel event, claimed (preventDefault) when found.
function claimPanel(app, event) {
  if (event.defaultPrevented || !event.detail || typeof event.detail !== "object") return null;
  const panel = panelOf(mainAreaWidgets(app.shell), event.target);
  if (panel) event.preventDefault();
  return panel;
}

function onInterrupt(app, event) {
  const panel = claimPanel(app, event);
  if (panel) event.detail.result = interrupt(panel);
}

function onWatch(app, event) {
  const onStatus = event.detail?.onStatus;
  if (typeof onStatus !== "function") return;
  const panel = claimPanel(app, event);
  if (!panel) return;
  event.detail.status = statusOf(panel);
  event.detail.unwatch = watch(panel, onStatus);
}

const plugin = {
  id: "skyline-nb:edit-source",
  description: "Applies skyline_nb widget edits (the batch size) to the notebook cell source.",
  autoStart: true,
  requires: [],
  activate(app) {
    document.addEventListener(EVENTS.EDIT, (event) => onEditSource(app, event));
    document.addEventListener(EVENTS.READ, answering(app, "cellId", readSource));
    document.addEventListener(EVENTS.FIND, answering(app, "source", findBySource));
    document.addEventListener(EVENTS.INTERRUPT, (event) => onInterrupt(app, event));
    document.addEventListener(EVENTS.WATCH, (event) => onWatch(app, event));
  },
};

export default plugin;
