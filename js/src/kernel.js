// The widget's requests to its kernel object (skyline_nb/live.py), over anywidget's
// request/response channel: `experimental.invoke(name, msg, {signal})` pairs each answer with its
// request and rejects when `signal` aborts. render() hands invoke over with `connectKernel`; a
// host without it (the offline page, an older anywidget) has no kernel to ask.
//
// A notebook reopened with a fresh kernel restores the widget from saved state (`live` still
// true) with no kernel object behind it: a ping that is never answered. Until a ping is answered
// nothing waits on the kernel, so a drag there never waits out a timeout.

import { COMMANDS } from "../shared/protocol.js";

const LOCATE_TIMEOUT_MS = 3000;

const invokers = new WeakMap(); // model -> anywidget's invoke for it
const pings = new WeakMap(); // model -> "waiting" | "answered" (sticky across views)

/** Remember how to reach the kernel for `model` (anywidget's `experimental.invoke`). */
export function connectKernel(model, invoke) {
  if (model && typeof model === "object" && typeof invoke === "function") invokers.set(model, invoke);
}

/** Whether a kernel comm could carry messages for `model` (not the standalone page). */
export function hasKernel(model) {
  return typeof model?.send === "function" && !model.standalone;
}

/** Whether a kernel object is meant to serve `model` (its `live` trait; absent = assume yes). */
export function isLive(model) {
  return hasKernel(model) && (typeof model.get !== "function" || model.get("live") !== false);
}

/** true once a ping of `model` was answered, false while one waits, null when none was sent. */
export function kernelAnswered(model) {
  if (!model || typeof model !== "object") return false;
  return pings.has(model) ? pings.get(model) === "answered" : null;
}

/**
 * Ask whether a kernel object serves `model`; resolves true when it answers, false when `signal`
 * aborts first or nothing can be asked. Waits as long as the kernel is busy (it answers after
 * the cell that is running), so it is bound to the view's signal, not to a timeout.
 */
export async function pingKernel(model, signal) {
  const invoke = invokers.get(model);
  if (!invoke || !isLive(model)) return false;
  if (pings.get(model) === "answered") return true;
  pings.set(model, "waiting");
  try {
    await invoke(COMMANDS.PING, null, { signal });
    pings.set(model, "answered");
    return true;
  } catch {
    if (pings.get(model) === "waiting") pings.delete(model); // a later view asks again
    return false;
  }
}

/**
 * The kernel's answer to "where is the batch-size literal in `code`, and what replaces it for
 * `batch`": {ok: true, edit} or {ok: false, reason}; null when no kernel answered a ping yet, or
 * this request went unanswered.
 */
export async function locateInKernel(model, code, batch, timeoutMs = LOCATE_TIMEOUT_MS) {
  const invoke = invokers.get(model);
  if (!invoke || kernelAnswered(model) !== true) return null;
  try {
    const [answer] = await invoke(COMMANDS.LOCATE, { code, batch_size: batch }, { signal: AbortSignal.timeout(timeoutMs) });
    return answer && typeof answer === "object" ? answer : null;
  } catch {
    return null;
  }
}
