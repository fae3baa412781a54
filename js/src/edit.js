// Writing the chosen batch size back into the source cell, at drag end. Three ways, in order
// (DESIGN.md, "Editing the source cell"):
//  (a) a bubbling, cancelable `skyline-edit-source` event that the companion JupyterLab
//      extension handles (it calls preventDefault and puts {ok, message} in detail.result,
//      possibly as a promise);
//  (b) the notebook's shared model reached through the widget manager — an internal API, so
//      every step is guarded and any surprise falls through to (c);
//  (c) a copyable `batch_size = N` for the user (the next %%skyline run can apply it).
// Offsets: report.source gives Python str offsets (code points); editors count UTF-16 units,
// so they are converted unless the report already carries start_utf16/end_utf16.

import { hasKernel } from "./actions.js";
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

/** Where to edit: edit_target (kept current by the kernel) over report.source. */
export function editTarget(model, report) {
  const source = report?.source || null;
  const trait = typeof model?.get === "function" ? model.get("edit_target") : null;
  if (trait && Number.isInteger(trait.start) && Number.isInteger(trait.end)) {
    const sameCell = source && (source.cell_id ?? null) === (trait.cell_id ?? null);
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

function wholeLineMatches(text, line) {
  const hits = [];
  for (let at = text.indexOf(line); at !== -1; at = text.indexOf(line, at + 1)) {
    const before = at === 0 || text[at - 1] === "\n" || text[at - 1] === "\r";
    const afterAt = at + line.length;
    const after = afterAt === text.length || text[afterAt] === "\n" || text[afterAt] === "\r";
    if (before && after) hits.push(at);
  }
  return hits;
}

/**
 * Find the literal in the cell's CURRENT text. Unchanged code: same span. Otherwise the line
 * that held the literal must occur exactly once, unchanged (the user may have typed elsewhere);
 * anything else is refused rather than guessed.
 */
export function relocate(current, span) {
  const { start, end, expected, code } = span;
  if (code === null || current === code) {
    return current.slice(start, end) === expected ? { start, end }
      : { error: "the batch size literal is not where it was when the cell was profiled" };
  }
  const lineStart = code.lastIndexOf("\n", start - 1) + 1;
  const nl = code.slice(end).search(/\r\n|\r|\n/);
  const lineEnd = nl === -1 ? code.length : end + nl;
  const hits = wholeLineMatches(current, code.slice(lineStart, lineEnd));
  if (hits.length === 0) return { error: "the line with the batch size changed since profiling; re-run the cell first" };
  if (hits.length > 1) return { error: "the line with the batch size now appears more than once; edit it by hand" };
  const at = hits[0] + (start - lineStart);
  return { start: at, end: at + (end - start) };
}

/**
 * Ask the kernel to find the literal in `code` by AST (skyline_nb/live.py answers a "locate"
 * message with a "located" one). Resolves to the answer, or null without a kernel/answer.
 */
export function locateInKernel(model, code, batch, timeoutMs = LOCATE_TIMEOUT_MS) {
  if (!hasKernel(model) || typeof model.on !== "function") return Promise.resolve(null);
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
    model.send({ kind: "locate", code, batch_size: batch, request });
  });
}

function sharedCell(model, cellId) {
  let shared;
  try {
    shared = model?.widget_manager?.context?.model?.sharedModel;
  } catch {
    return null;
  }
  const cells = shared?.cells;
  if (!cellId || !cells || typeof cells.find !== "function") return null;
  const cell = cells.find((c) => c && c.id === cellId);
  if (!cell || typeof cell.updateSource !== "function") return null;
  return { shared, cell };
}

const sourceOf = (cell) => (typeof cell.getSource === "function" ? cell.getSource() : cell.source);

async function viaSharedModel(model, cellId, span, text) {
  const found = sharedCell(model, cellId);
  if (!found) return null;
  const { shared, cell } = found;
  const current = sourceOf(cell);
  if (typeof current !== "string") return null;
  let where = null;
  if (span.code !== null && current !== span.code) {
    // The user typed since profiling: the kernel re-finds the literal by AST, if it can.
    const answer = await locateInKernel(model, current, Number(text));
    if (answer && !answer.ok) return { ok: false, via: "shared-model", message: `Not edited: ${answer.reason}.` };
    if (answer && sourceOf(cell) === current) where = { start: answer.start_utf16, end: answer.end_utf16 };
  }
  where = where || relocate(sourceOf(cell), span);
  if (where.error) return { ok: false, via: "shared-model", message: `Not edited: ${where.error}.` };
  const write = () => cell.updateSource(where.start, where.end, text);
  // One transaction = one undo step in the cell.
  if (typeof shared.transact === "function") shared.transact(write);
  else write();
  return { ok: true, via: "shared-model", message: `Set the batch size to ${text} in the source cell.` };
}

/**
 * Apply `batch` to the source: returns {ok, via: "event"|"shared-model"|"manual", message,
 * text} where `text` is the line to copy when nothing could be edited.
 */
export async function applyEdit({ el, model, report, batch }) {
  const text = String(batch);
  const manual = (why) => ({ ok: false, via: "manual", text: `batch_size = ${text}`, message: why });
  const target = editTarget(model, report);
  if (!target || target.editable === false || !Number.isInteger(target.start)) {
    return manual(`The batch size cannot be edited here${target?.reason ? `: ${target.reason}` : ""}. Set it by hand:`);
  }
  const span = literalSpan(target);
  const cellId = target.cell_id ?? null;
  const detail = { cellId, start: span.start, end: span.end, text, expected: span.expected, file: target.file ?? null };
  const event = new CustomEvent("skyline-edit-source", { bubbles: true, cancelable: true, composed: true, detail });
  el.dispatchEvent(event);
  if (event.defaultPrevented) {
    try {
      const result = (await Promise.resolve(detail.result)) || { ok: true };
      return result.ok ? { ok: true, via: "event", message: result.message || `Set the batch size to ${text} in the source cell.` }
        : manual(`${result.message || "The notebook refused the edit"}. Set it by hand:`);
    } catch (err) {
      return manual(`The edit failed (${err?.message || err}). Set it by hand:`);
    }
  }
  try {
    const done = await viaSharedModel(model, cellId, span, text);
    if (done?.ok) return done;
    if (done) return { ...manual(`${done.message} Set it by hand:`) };
  } catch {
    // Internal API changed shape: fall through to the copyable text.
  }
  return manual("No notebook editor is reachable from this view. Set it by hand:");
}

/** The line under the bars that says what happened to the source (with a copy box). */
export function createEditNotice({ signal }) {
  const el = h("div", { class: "sk-edit", data: { skyline: "edit-status" }, attrs: { "aria-live": "polite", hidden: "" } });
  function show(result) {
    el.replaceChildren(h("span", { class: "sk-edit-message", text: result.message }));
    el.classList.toggle("sk-edit-ok", Boolean(result.ok));
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
