// Writing the chosen batch size back into the source cell, at drag end. Three ways, in order
// (DESIGN.md, "Editing the source cell"):
//  (a) a bubbling, cancelable `skyline-edit-source` event that the companion JupyterLab
//      extension handles (it calls preventDefault and puts {ok, message} in detail.result,
//      possibly as a promise); a refusal there still tries (b);
//  (b) the notebook's shared model reached through the widget manager — an internal API, so
//      every step is guarded and any surprise falls through to (c);
//  (c) a copyable `batch_size = N` for the user (the next %%skyline run can apply it).
// A cell that ran before `%load_ext` has no id the kernel knows, only its text as it ran: the
// cell is found by an exact, unique match of that text (the extension's `skyline-find-cell`
// event, else the shared model) and its id written into `edit_target`, so the kernel adopts it.
// Before any of them the literal is re-located in the cell's CURRENT text (read through the
// extension's `skyline-read-source` event, else the shared model): the user may have typed
// since profiling. Changed text goes to the kernel's AST locator; its refusal is final.
// Offsets: report.source gives Python str offsets (code points); editors count UTF-16 units,
// so they are converted unless the report already carries start_utf16/end_utf16.

import { FIND_EVENT, cellWithSource } from "../labextension/edit.js";
import { hasKernel, serverAnswered } from "./actions.js";
import { h } from "./dom.js";

const LOCATE_TIMEOUT_MS = 3000;

/** UTF-16 index of the Python (code point) offset `offset` in `code`. */
export function pyOffsetToUtf16(code, offset) {
  let units = 0;
  let points = 0;
  while (points < offset && units < code.length) {
    const c = code.codePointAt(units);
    units += c > 0xffff ? 2 : 1;
    points += 1;
  }
  return units;
}

/**
 * Where to edit: edit_target (kept current by the kernel) over report.source. A source without
 * a cell id is the same cell as a target with one: the id was found by the cell's text since.
 */
export function editTarget(model, report) {
  const source = report?.source || null;
  const trait = typeof model?.get === "function" ? model.get("edit_target") : null;
  if (trait && Number.isInteger(trait.start) && Number.isInteger(trait.end)) {
    const sameCell = source && (source.cell_id == null || source.cell_id === (trait.cell_id ?? null));
    return { editable: true, ...(sameCell ? source : {}), ...trait };
  }
  return source;
}

/** The literal's span in UTF-16 units and its current text. */
export function literalSpan(target) {
  const code = typeof target.code === "string" ? target.code : null;
  const start = Number.isInteger(target.start_utf16) ? target.start_utf16
    : code !== null ? pyOffsetToUtf16(code, target.start) : target.start;
  const end = Number.isInteger(target.end_utf16) ? target.end_utf16
    : code !== null ? pyOffsetToUtf16(code, target.end) : target.end;
  const expected = code !== null ? code.slice(start, end) : String(target.value ?? "");
  return { start, end, expected, code };
}

function linesOf(text) {
  const lines = [];
  const eol = /\r\n|\r|\n/g;
  let at = 0;
  for (let m = eol.exec(text); m; m = eol.exec(text)) {
    lines.push({ at, text: text.slice(at, m.index) });
    at = m.index + m[0].length;
  }
  lines.push({ at, text: text.slice(at) });
  return lines;
}

/**
 * Find the literal in the cell's CURRENT text without a kernel. Unchanged code: same span.
 * Otherwise the line that held the literal must occur exactly once, unchanged but for the
 * digits of the literal itself (an earlier drag may have rewritten them); anything else is
 * refused rather than guessed.
 */
export function relocate(current, span) {
  const { start, end, expected, code } = span;
  if (code === null || current === code) {
    return current.slice(start, end) === expected ? { start, end }
      : { error: "the batch size literal is not where it was when the cell was profiled" };
  }
  const lineStart = code.lastIndexOf("\n", start - 1) + 1;
  const nl = code.slice(end).search(/\r\n|\r|\n/);
  const before = code.slice(Math.max(lineStart, code.lastIndexOf("\r", start - 1) + 1), start);
  const after = code.slice(end, nl === -1 ? code.length : end + nl);
  const hits = linesOf(current).filter(({ text }) => text.length > before.length + after.length
    && text.startsWith(before) && text.endsWith(after)
    && /^[0-9]+$/.test(text.slice(before.length, text.length - after.length)));
  if (hits.length === 0) return { error: "the line with the batch size changed since profiling; re-run the cell first" };
  if (hits.length > 1) return { error: "the line with the batch size now appears more than once; edit it by hand" };
  const at = hits[0].at + before.length;
  return { start: at, end: at + hits[0].text.length - before.length - after.length };
}

/**
 * Ask the kernel to find the literal in `code` by AST (skyline_nb/live.py answers a "locate"
 * message with a "located" one). Resolves to the answer, or null without a kernel/answer.
 */
export function locateInKernel(model, code, batch, timeoutMs = LOCATE_TIMEOUT_MS) {
  if (!hasKernel(model) || typeof model.on !== "function") return Promise.resolve(null);
  if (typeof model.get === "function" && model.get("live") === false) return Promise.resolve(null);
  // Pinged and never answered (a reopened notebook: no kernel object serves this widget):
  // nobody would answer, so do not wait out the timeout.
  if (serverAnswered(model) === false) return Promise.resolve(null);
  const request = `locate-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return new Promise((resolve) => {
    let timer = null;
    const onMsg = (msg) => {
      if (msg && msg.kind === "located" && msg.request === request) done(msg);
    };
    const done = (answer) => {
      clearTimeout(timer);
      if (typeof model.off === "function") model.off("msg:custom", onMsg);
      resolve(answer);
    };
    timer = setTimeout(() => done(null), timeoutMs);
    model.on("msg:custom", onMsg);
    try {
      model.send({ kind: "locate", code, batch_size: batch, request });
    } catch {
      done(null);
    }
  });
}

/** The notebook's shared model through the widget manager (internal API), or null. */
function sharedNotebook(model) {
  try {
    const shared = model?.widget_manager?.context?.model?.sharedModel;
    return Array.isArray(shared?.cells) ? shared : null;
  } catch {
    return null;
  }
}

function sharedCell(model, cellId) {
  const shared = sharedNotebook(model);
  if (!cellId || !shared) return null;
  const cell = shared.cells.find((c) => c && c.id === cellId);
  if (!cell || typeof cell.updateSource !== "function") return null;
  return { shared, cell };
}

const sourceOf = (cell) => (typeof cell.getSource === "function" ? cell.getSource() : cell.source);

const EVENT_INIT = { bubbles: true, cancelable: true, composed: true };

/**
 * The cell's current text: the companion extension answers a `skyline-read-source` event
 * (detail {cellId} → detail.source); else the widget manager's shared model; else null.
 */
export function readCurrentSource(el, model, cellId) {
  if (typeof cellId !== "string" || cellId === "") return null;
  const detail = { cellId };
  const event = new CustomEvent("skyline-read-source", { ...EVENT_INIT, detail });
  el.dispatchEvent(event);
  if (event.defaultPrevented && typeof detail.source === "string") return detail.source;
  try {
    const found = sharedCell(model, cellId);
    const source = found ? sourceOf(found.cell) : null;
    return typeof source === "string" ? source : null;
  } catch {
    return null;
  }
}

/**
 * The id of the cell to edit, as {cellId} or {error}. The target's own id when it has one; else
 * (a cell that ran before `%load_ext`) the one cell whose text is exactly the code that ran,
 * found by the companion extension or in the shared model. A found id goes into `edit_target`:
 * the next drag edits that cell even once its text changed, and the kernel adopts the id.
 */
export function findSourceCell(el, model, target) {
  if (target.cell_id != null) return { cellId: target.cell_id };
  if (typeof target.code !== "string") return { cellId: null };
  const detail = { source: target.code };
  const event = new CustomEvent(FIND_EVENT, { ...EVENT_INIT, detail });
  el.dispatchEvent(event);
  let found = event.defaultPrevented ? detail : null;
  const shared = found ? null : sharedNotebook(model);
  if (shared) {
    const match = cellWithSource(shared.cells, target.code);
    found = match.cell ? { cellId: match.cell.id } : match;
  }
  if (!found) return { error: "no notebook editor is reachable from this view to find the source cell" };
  if (found.error) return { error: found.error };
  rememberCell(model, target, found.cellId);
  return { cellId: found.cellId };
}

const TARGET_KEYS = ["kind", "start", "end", "start_utf16", "end_utf16", "value"];

function rememberCell(model, target, cellId) {
  if (typeof model?.set !== "function") return;
  const trait = typeof model.get === "function" ? model.get("edit_target") : null;
  const base = Number.isInteger(trait?.start) ? trait
    : Object.fromEntries(TARGET_KEYS.map((key) => [key, target[key] ?? null]));
  model.set("edit_target", { ...base, cell_id: cellId });
  model.save_changes?.();
}

/**
 * Where the literal is in `current` (the cell's text now): {start, end, expected} in UTF-16
 * units, with `expected` the characters there now, or {error}. Unchanged text keeps the
 * profiled span; changed text is re-located by the kernel's AST (its refusal is final), or,
 * with no kernel to ask, line by line. Unknown text (null) keeps the span: the editor still
 * checks `expected` before it writes.
 */
export async function locateCurrent(model, current, span, batch) {
  const keep = (where) => ({ ...where, expected: current === null ? span.expected : current.slice(where.start, where.end) });
  if (current === null || (span.code !== null && current === span.code)) return keep({ start: span.start, end: span.end });
  const answer = await locateInKernel(model, current, batch);
  if (answer) {
    if (!answer.ok) return { error: answer.reason || "the kernel could not find the batch size literal" };
    const start = Number.isInteger(answer.start_utf16) ? answer.start_utf16 : pyOffsetToUtf16(current, answer.start);
    const end = Number.isInteger(answer.end_utf16) ? answer.end_utf16 : pyOffsetToUtf16(current, answer.end);
    if (!/^[0-9]+$/.test(current.slice(start, end))) return { error: "the kernel's answer does not point at an integer literal" };
    return keep({ start, end });
  }
  const where = relocate(current, span);
  return where.error ? where : keep(where);
}

function viaSharedModel(model, cellId, where, text) {
  const found = sharedCell(model, cellId);
  if (!found) return null;
  const { shared, cell } = found;
  const current = sourceOf(cell);
  if (typeof current !== "string") return null;
  if (where.end > current.length || current.slice(where.start, where.end) !== where.expected) {
    return { ok: false, via: "shared-model", message: "Not edited: the cell changed while the edit was on its way; drag again" };
  }
  const write = () => cell.updateSource(where.start, where.end, text);
  // One transaction = one undo step in the cell, never merged with changes just before or
  // after it (Yjs merges changes less than 500 ms apart).
  const stopCapturing = () => cell.undoManager?.stopCapturing?.();
  stopCapturing();
  if (typeof shared.transact === "function") shared.transact(write);
  else write();
  stopCapturing();
  return { ok: true, via: "shared-model", message: edited(where.expected, text) };
}

/** What a successful edit tells the user (the same whichever way it went). */
const edited = (was, text) => `Set the batch size to ${text} in the source cell (was ${was}). Ctrl+Z in that cell undoes it.`;

/** "text" as a sentence that ends with one full stop. */
const sentence = (text) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * Apply `batch` to the source: returns {ok, via: "event"|"shared-model"|"manual", message,
 * text} where `text` is the line to copy when nothing could be edited. One call edits the cell
 * at most once (one undo step), and only where the literal is now.
 */
export async function applyEdit({ el, model, report, batch }) {
  const text = String(batch);
  const manual = (why) => ({ ok: false, via: "manual", text: `batch_size = ${text}`, message: `${sentence(why)} Set it by hand:` });
  const target = editTarget(model, report);
  if (!target || target.editable === false || !Number.isInteger(target.start)) {
    return manual(`The batch size cannot be edited here${target?.reason ? `: ${target.reason}` : ""}`);
  }
  const span = literalSpan(target);
  const cell = findSourceCell(el, model, target);
  if (cell.error) return manual(`Not edited: ${cell.error}`);
  const cellId = cell.cellId;
  const where = await locateCurrent(model, readCurrentSource(el, model, cellId), span, batch);
  if (where.error) return manual(`Not edited: ${where.error}`);
  const detail = { cellId, start: where.start, end: where.end, text, expected: where.expected, file: target.file ?? null };
  const event = new CustomEvent("skyline-edit-source", { ...EVENT_INIT, detail });
  el.dispatchEvent(event);
  let refused = null;
  if (event.defaultPrevented) {
    try {
      const result = (await Promise.resolve(detail.result)) || { ok: true };
      if (result.ok) return { ok: true, via: "event", message: edited(where.expected, text) };
      refused = result.message || "The notebook refused the edit";
    } catch (err) {
      refused = `The edit failed (${err?.message || err})`;
    }
  }
  // The extension is absent, or refused without editing: the shared model may still do it.
  try {
    const done = viaSharedModel(model, cellId, where, text);
    if (done?.ok) return done;
    if (done) return manual(refused || done.message);
  } catch {
    // Internal API changed shape: fall through to the copyable text.
  }
  return manual(refused || "No notebook editor is reachable from this view");
}

/** The line under the bars that says what happened to the source (with a copy box). */
export function createEditNotice({ signal }) {
  const el = h("div", { class: "sk-edit", data: { skyline: "edit-status" }, attrs: { "aria-live": "polite", hidden: "" } });
  function show(result) {
    el.replaceChildren(h("span", { class: "sk-edit-message", text: result.message }));
    el.classList.toggle("sk-edit-ok", Boolean(result.ok));
    el.classList.toggle("sk-edit-refused", !result.ok);
    el.dataset.via = result.via || ""; // which way the edit went (or "manual"), for tests
    if (result.text) {
      const box = h("input", { class: "sk-copy-text", data: { skyline: "copy-text" }, attrs: { readonly: "", value: result.text, "aria-label": "Batch size line to copy" } });
      box.value = result.text;
      const copy = h("button", { class: "sk-button", text: "Copy", attrs: { type: "button" } });
      box.addEventListener("focus", () => box.select(), { signal });
      copy.addEventListener("click", () => {
        box.select();
        navigator.clipboard?.writeText(result.text)?.catch?.(() => {});
      }, { signal });
      el.append(box, copy);
    }
    el.hidden = false;
  }
  return { el, show, hide: () => { el.hidden = true; } };
}
