// Writing the chosen batch size back into the source cell, at drag end (DESIGN.md, "Editing the
// source cell"). The kernel is the one authority on where the literal is and what replaces it:
// the edit {start, end, expected, text} (UTF-16 code units) is the one it computed, either for
// the text the cell had when it was profiled (report.source / edit_target, used while the cell
// still holds exactly that text) or, when the cell changed, for its current text, asked for over
// anywidget's invoke (kernel.js); its refusal is final, and a changed cell with no kernel to ask
// is not edited. The edit is applied by the one writer, `writeEdit` (js/shared/cells.js):
//  (a) through a bubbling, cancelable EVENTS.EDIT that the companion extension handles (it calls
//      preventDefault and puts {ok, message} in detail.result, possibly as a promise);
//  (b) else, or when the extension refused, on the notebook's shared model reached through the
//      widget manager, an internal API, so every step is guarded and any surprise falls to (c);
//  (c) a copyable `batch_size = N` for the user (the next %%skyline run can apply it).
// A cell that ran before `%load_ext` has no id the kernel knows, only its text as it ran: the
// cell is found by an exact, unique match of that text (EVENTS.FIND, else the shared model) and
// its id written into `edit_target`, so the kernel adopts it.

import { cellWithSource, textOf, writeEdit } from "../shared/cells.js";
import { askHost, EVENTS } from "../shared/protocol.js";
import { h } from "./dom.js";
import { locateInKernel } from "./kernel.js";

/**
 * Where to edit: edit_target (kept current by the kernel) over report.source. A source without
 * a cell id is the same cell as a target with one: the id was found by the cell's text since.
 */
export function editTarget(model, report) {
  const source = report?.source || null;
  const trait = typeof model?.get === "function" ? model.get("edit_target") : null;
  if (trait && Number.isInteger(trait.start_utf16) && Number.isInteger(trait.end_utf16)) {
    const sameCell = source && (source.cell_id == null || source.cell_id === (trait.cell_id ?? null));
    return { editable: true, ...(sameCell ? source : {}), ...trait };
  }
  return source;
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
  return shared.cells.find((c) => c && c.id === cellId) ?? null;
}

/**
 * The cell's current text: the companion extension answers EVENTS.READ (detail {cellId} →
 * detail.source); else the widget manager's shared model; else null.
 */
export function readCurrentSource(el, model, cellId) {
  if (typeof cellId !== "string" || cellId === "") return null;
  const answered = askHost(el, EVENTS.READ, { cellId });
  if (typeof answered?.source === "string") return answered.source;
  try {
    const cell = sharedCell(model, cellId);
    const source = cell ? textOf(cell) : null;
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
  let found = askHost(el, EVENTS.FIND, { source: target.code });
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

const TARGET_KEYS = ["start_utf16", "end_utf16", "value", "text"];

function rememberCell(model, target, cellId) {
  if (typeof model?.set !== "function") return;
  const trait = typeof model.get === "function" ? model.get("edit_target") : null;
  const base = Number.isInteger(trait?.start_utf16) ? trait
    : Object.fromEntries(TARGET_KEYS.map((key) => [key, target[key] ?? null]));
  model.set("edit_target", { ...base, cell_id: cellId });
  model.save_changes?.();
}

/** The literal as the cell has it: its text (`2_000_000`) where the kernel sent one (reports
 * before it did held plain digits only). */
const written = (target) => (typeof target?.text === "string" && target.text ? target.text : String(target.value));

/** `batch` spelled like the target's literal (source.spell): in threes by `_` when it is. */
export const spell = (batch, target) => (written(target ?? {}).includes("_")
  ? String(batch).replace(/\B(?=(\d{3})+(?!\d))/g, "_") : String(batch));

/**
 * The kernel's edit {start, end, expected, text} for setting `batch` in `current` (the cell's
 * text now), or {error}. While the cell holds exactly the text it was profiled with (or its text
 * cannot be read: the writer still checks `expected`), that is the span the kernel gave with the
 * report; otherwise the kernel locates the literal in `current` by AST.
 */
export async function locateEdit(model, current, target, batch) {
  if (current === null || current === target.code) {
    return { start: target.start_utf16, end: target.end_utf16, expected: written(target), text: spell(batch, target) };
  }
  const answer = await locateInKernel(model, current, batch);
  if (!answer) return { error: "the cell changed since it was profiled and no kernel answered to find the batch size in it; re-run the cell, then drag" };
  if (!answer.ok || !answer.edit) return { error: answer.reason || "the kernel could not find the batch size literal" };
  return answer.edit;
}

/** (b): the same edit, by the same writer, on the widget manager's shared model; null if absent. */
function viaSharedModel(model, edit) {
  const cell = sharedCell(model, edit.cellId);
  if (!cell) return null;
  return { ...writeEdit(cell, edit), via: "shared-model" };
}

/**
 * Tell the kernel the cell holds `batch` by our hand: its next `%%skyline` run then leaves the
 * cell as it finds it (the user may have undone the edit), instead of writing the drag in again
 * as it does for one no front-end path could write (fallback (c), `cellbody.pending_edit`).
 */
function markWritten(model, batch) {
  if (typeof model?.set !== "function") return;
  model.set("written_batch_size", batch);
  model.save_changes?.();
}

/** What a successful edit tells the user (the same whichever way it went). */
const edited = (was, text) => `Set the batch size to ${text} in the source cell (was ${was}). Ctrl+Z in that cell undoes it.`;

/** "text" as a sentence that ends with one full stop. */
const sentence = (text) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * Apply `batch` to the source: returns {ok, via: "event"|"shared-model"|"manual", message,
 * text} where `text` is the line to copy when nothing could be edited. One call edits the cell
 * at most once (one undo step), and only where the kernel says the literal is now.
 */
export async function applyEdit({ el, model, report, batch }) {
  const target = editTarget(model, report);
  const manual = (why) => ({ ok: false, via: "manual", text: `batch_size = ${spell(batch, target)}`, message: `${sentence(why)} Set it by hand:` });
  if (!target || target.editable === false || !Number.isInteger(target.start_utf16)) {
    return manual(`The batch size cannot be edited here${target?.reason ? `: ${target.reason}` : ""}`);
  }
  const cell = findSourceCell(el, model, target);
  if (cell.error) return manual(`Not edited: ${cell.error}`);
  const where = await locateEdit(model, readCurrentSource(el, model, cell.cellId), target, batch);
  if (where.error) return manual(`Not edited: ${where.error}`);
  const edit = { cellId: cell.cellId, start: where.start, end: where.end, expected: where.expected, text: where.text };
  const done = (via) => {
    markWritten(model, batch);
    return { ok: true, via, message: edited(edit.expected, edit.text) };
  };
  let refused = null;
  const answered = askHost(el, EVENTS.EDIT, edit);
  if (answered) {
    try {
      const result = (await Promise.resolve(answered.result)) || { ok: true };
      if (result.ok) return done("event");
      refused = result.message || "The notebook refused the edit";
    } catch (err) {
      refused = `The edit failed (${err?.message || err})`;
    }
  }
  // The extension is absent, or refused without editing: the shared model may still do it.
  try {
    const result = viaSharedModel(model, edit);
    if (result?.ok) return done(result.via);
    if (result) return manual(refused || result.message);
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
