// The names the widget bundle (js/src), the companion labextension (js/labextension) and the
// kernel (skyline_nb/live.py) agree on. Both bundles import this module; a Python test reads it
// to check that the kernel serves exactly these commands and message kinds.
//
// DOM events, dispatched by the widget from its own node (inside a cell's output area) with
// EVENT_INIT, answered synchronously by the extension, which calls preventDefault() when it
// found the cell and writes its answer into `detail`:
//   EVENTS.FIND  detail {source}: the id of the one cell whose text is exactly `source` (a cell
//                that ran before `%load_ext`, known to the kernel by its text only)
//                -> detail.cellId, or detail.error (no such cell, or several);
//   EVENTS.READ  detail {cellId}: that cell's current text -> detail.source;
//   EVENTS.EDIT  detail {cellId, start, end, expected, text}: the kernel's edit (UTF-16 code
//                units) for that cell -> detail.result {ok, message}, written by `writeEdit`
//                (cells.js). When no open notebook holds the cell the event is left alone
//                (no preventDefault), with detail.result {ok: false, message}.
//
// Requests to the kernel that want an answer: anywidget commands (experimental.invoke in the
// front end, @anywidget.experimental.command methods of skyline_nb.live.LiveWidget).
//   COMMANDS.PING    (no payload) -> {ok: true}: a kernel object serves this widget;
//   COMMANDS.LOCATE  {code, batch_size} -> {ok: true, edit: {start, end, expected, text}} or
//                    {ok: false, reason}: the literal found by AST in `code`, the cell's text now.
// Messages that only start work in the kernel ({kind, ...}; results come back in traits):
//   MESSAGES.REPROFILE  {kind}: profile again;
//   MESSAGES.MEASURE    {kind, batch_size}: measure one iteration at that batch size.

export const EVENTS = Object.freeze({
  EDIT: "skyline-edit-source",
  READ: "skyline-read-source",
  FIND: "skyline-find-cell",
});

/** Every protocol event bubbles out of the widget (and its shadow roots) and can be answered. */
export const EVENT_INIT = Object.freeze({ bubbles: true, cancelable: true, composed: true });

export const COMMANDS = Object.freeze({
  PING: "ping",
  LOCATE: "locate",
});

export const MESSAGES = Object.freeze({
  REPROFILE: "reprofile",
  MEASURE: "measure",
});
