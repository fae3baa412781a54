// The names the widget bundle (js/src), the companion labextension (js/labextension) and the
// kernel (skyline_nb/live.py) agree on. Both bundles import this module; a Python test reads it
// to check that the kernel serves exactly these commands and message kinds.
//
// DOM events, dispatched by the widget from its own node (inside a cell's output area) with
// EVENT_INIT, answered synchronously by the extension, which calls preventDefault() when it
// found the cell (or notebook) asked for and writes its answer into `detail`:
//   EVENTS.FIND  detail {source}: the id of the one cell whose text is exactly `source` (a cell
//                that ran before `%load_ext`, known to the kernel by its text only)
//                -> detail.cellId, or detail.error (no such cell, or several);
//   EVENTS.READ  detail {cellId}: that cell's current text -> detail.source;
//   EVENTS.EDIT  detail {cellId, start, end, expected, text}: the kernel's edit (UTF-16 code
//                units) for that cell -> detail.result {ok, message}, written by `writeEdit`
//                (cells.js). When no open notebook holds the cell the event is left alone
//                (no preventDefault), with detail.result {ok: false, message}.
//   EVENTS.INTERRUPT  detail {}: interrupt the kernel of the notebook whose node holds the
//                widget (the Cancel button: the work runs on the kernel's main thread, as a
//                cell does, and stops as a cell does) -> detail.result, a promise of
//                {ok, message}. Only the widget's own notebook is interrupted: elsewhere the
//                event is left alone.
//   EVENTS.WATCH detail {onStatus}: follow the kernel of the widget's own notebook ->
//                detail.status (its status now) and detail.unwatch(); onStatus(status) is called
//                on every change. Statuses are the host's ("idle", "busy", "restarting",
//                "autorestarting", "dead", ...), plus "none" (no kernel: shut down) and
//                "changed" (another kernel took its place).
//
// Requests to the kernel that want an answer: anywidget commands (experimental.invoke in the
// front end, @anywidget.experimental.command methods of skyline_nb.live.LiveWidget).
//   COMMANDS.PING    (no payload) -> {ok: true}: a kernel object serves this widget;
//   COMMANDS.LOCATE  {code, batch_size} -> {ok: true, edit: {start, end, expected, text}} or
//                    {ok: false, reason}: the literal found by AST in `code`, the cell's text now.
// Messages that only start work in the kernel ({kind, ...}; results come back in traits; the
// work runs on the kernel's main thread whichever thread reads the message):
//   MESSAGES.REPROFILE  {kind}: profile again;
//   MESSAGES.MEASURE    {kind, batch_size}: measure one iteration at that batch size.

export const EVENTS = Object.freeze({
  EDIT: "skyline-edit-source",
  READ: "skyline-read-source",
  FIND: "skyline-find-cell",
  INTERRUPT: "skyline-interrupt-kernel",
  WATCH: "skyline-watch-kernel",
});

/** Every protocol event bubbles out of the widget (and its shadow roots) and can be answered. */
export const EVENT_INIT = Object.freeze({ bubbles: true, cancelable: true, composed: true });

/** Dispatch protocol event `name` from `el`; the detail when the extension answered, else null. */
export function askHost(el, name, detail) {
  const event = new CustomEvent(name, { ...EVENT_INIT, detail });
  el.dispatchEvent(event);
  return event.defaultPrevented ? detail : null;
}

export const COMMANDS = Object.freeze({
  PING: "ping",
  LOCATE: "locate",
});

export const MESSAGES = Object.freeze({
  REPROFILE: "reprofile",
  MEASURE: "measure",
});
