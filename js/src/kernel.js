// The widget's kernel: requests to its kernel object (skyline_nb/live.py) over anywidget's
// request/response channel, whether one still answers, and interrupting it.
//
// `experimental.invoke(name, msg, {signal})` pairs each answer with its request and rejects when
// `signal` aborts; render() hands it over with `connectKernel`. A host without it (the offline
// page, an older anywidget) has no kernel to ask.
//
// Liveness, per model object (views given the same one share it): "unknown" until a ping was
// sent, "waiting" for the first answer, then "live" (a kernel object answered), "silent" (no
// answer within PING_TIMEOUT_MS: the kernel is busy, or no kernel object serves the widget any
// more) or "gone" (the host said the kernel restarted, died or was shut down; final, since the
// kernel objects died with it). A silent ping keeps waiting a while (ANSWER_WAIT_MS), so a kernel
// that was only busy turns the widget live once it answers; after that, the next hover or click
// asks again. A widget restored from saved state (a reopened notebook) or whose kernel restarted
// is never answered: its requests are refused at once with the reason rather than left to hang,
// and a drag there never waits out a timeout.
//
// The host is the companion extension (js/labextension), reached by DOM events from the
// widget's node: EVENTS.WATCH tells the kernel's status as it changes, EVENTS.INTERRUPT
// interrupts it (work the widget started is stopped by an interrupt, as a cell is; the kernel
// may not even read a message before that work ends).

import { askHost, COMMANDS, EVENTS } from "../shared/protocol.js";

const LOCATE_TIMEOUT_MS = 3000;
export const PING_TIMEOUT_MS = 2000;
const ANSWER_WAIT_MS = 60_000;

// Host statuses after which the kernel object that served a widget is gone, and what to say.
const GONE = Object.freeze({
  restarting: "The kernel restarted",
  autorestarting: "The kernel died and restarted",
  dead: "The kernel died",
  terminating: "The kernel was shut down",
  none: "No kernel is running",
  changed: "The notebook changed kernels",
});
const RERUN = "run the profiling cell again to re-profile or measure.";

const invokers = new WeakMap(); // model -> anywidget's invoke for it
const states = new WeakMap(); // model -> {state, host, gone, pending, pendingSince, listeners}

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

function stateOf(model) {
  if (!states.has(model)) states.set(model, { state: "unknown", host: null, gone: "", pending: null, pendingSince: 0, listeners: new Set() });
  return states.get(model);
}

function setState(model, state) {
  const s = stateOf(model);
  if (s.state === state) return;
  s.state = state;
  for (const listener of [...s.listeners]) listener();
}

/**
 * `model`'s liveness: {state, reason}, the reason one line for the user when the kernel cannot
 * be asked ("silent" or "gone"), else "".
 */
export function kernelLiveness(model) {
  const s = model && typeof model === "object" ? states.get(model) : null;
  if (!s) return { state: "unknown", reason: "" };
  if (s.state === "gone") return { state: s.state, reason: `${s.gone}: ${RERUN}` };
  if (s.state !== "silent") return { state: s.state, reason: "" };
  if (s.host === "busy") return { state: s.state, reason: "The kernel is busy running a cell: Re-profile and Measure work once it is idle." };
  if (s.host) return { state: s.state, reason: `No kernel object serves this widget (the kernel restarted or the notebook was reopened): ${RERUN}` };
  return { state: s.state, reason: `The kernel does not answer (busy, restarted or shut down): ${RERUN}` };
}

/** true once a ping of `model` was answered, false while one waits or none can be, null when none was sent. */
export function kernelAnswered(model) {
  if (!model || typeof model !== "object") return false;
  const { state } = kernelLiveness(model);
  return state === "unknown" ? null : state === "live";
}

/** Call `listener()` whenever `model`'s liveness changes, until `signal` aborts. */
export function onLiveness(model, listener, signal) {
  const { listeners } = stateOf(model);
  listeners.add(listener);
  signal?.addEventListener("abort", () => listeners.delete(listener));
}

/**
 * Ask whether a kernel object serves `model`; resolves true when it answers, false when nothing
 * can be asked, or no answer came before `signal` aborted or ANSWER_WAIT_MS passed. A busy
 * kernel answers once the cell it runs ends. A ping sent less than PING_TIMEOUT_MS ago is
 * shared; an older one unanswered is not waited on alone (it may have been lost).
 */
export function pingKernel(model, signal, waitMs = ANSWER_WAIT_MS) {
  const invoke = invokers.get(model);
  if (!invoke || !isLive(model)) return Promise.resolve(false);
  const s = stateOf(model);
  const now = performance.now();
  if (s.pending && now - s.pendingSince < PING_TIMEOUT_MS) return s.pending;
  if (s.state === "unknown") setState(model, "waiting");
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), waitMs);
  signal?.addEventListener("abort", () => stop.abort(), { once: true });
  const ping = invoke(COMMANDS.PING, null, { signal: stop.signal }).then(
    () => {
      // Gone is final: an answer now is the old kernel's last word (the new one never knew
      // this widget).
      if (s.state !== "gone") setState(model, "live");
      return s.state === "live";
    },
    () => {
      if (s.state === "waiting") setState(model, "unknown"); // a later view asks again
      return false;
    },
  ).finally(() => {
    clearTimeout(timer);
    if (s.pending === ping) s.pending = null;
  });
  Object.assign(s, { pending: ping, pendingSince: now });
  return ping;
}

/**
 * Check that the kernel object still answers: a ping, and {state, reason} (kernelLiveness) once
 * it answered or PING_TIMEOUT_MS passed, whichever comes first. The ping keeps waiting after
 * the timeout (until `signal` aborts).
 */
export async function checkKernel(model, signal, timeoutMs = PING_TIMEOUT_MS) {
  const answered = pingKernel(model, signal);
  let timer = null;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve("late"), timeoutMs); });
  const first = await Promise.race([answered, late]);
  clearTimeout(timer);
  const s = stateOf(model);
  if (first === "late" && s.state !== "gone" && s.state !== "unknown") setState(model, "silent");
  return kernelLiveness(model);
}

/**
 * Follow the status of the kernel of the notebook holding `el` (the companion extension
 * answers EVENTS.WATCH) until `signal` aborts: a restart, death or shutdown makes `model`
 * "gone" at once. No host: liveness rests on pings alone.
 */
export function watchHost(model, el, signal) {
  const s = stateOf(model);
  // A view may start watching while the kernel restarts: its status now counts as a change.
  const onStatus = (status) => {
    s.host = typeof status === "string" ? status : null;
    if (Object.hasOwn(GONE, s.host ?? "")) {
      s.gone = GONE[s.host];
      setState(model, "gone");
    }
  };
  const answer = askHost(el, EVENTS.WATCH, { onStatus });
  if (!answer) return;
  onStatus(answer.status);
  if (typeof answer.unwatch === "function") signal.addEventListener("abort", answer.unwatch);
}

/**
 * Interrupt the kernel running `model`'s work, as the notebook's interrupt button does: through
 * the companion extension, else the notebook's session reached through the widget manager (an
 * internal API, guarded). Resolves {ok, message}.
 */
export async function interruptKernel(model, el) {
  const answer = askHost(el, EVENTS.INTERRUPT, {});
  if (answer?.result) return answer.result;
  try {
    const kernel = model?.widget_manager?.context?.sessionContext?.session?.kernel;
    if (typeof kernel?.interrupt === "function") {
      await kernel.interrupt();
      return { ok: true, message: "" };
    }
  } catch (error) {
    return { ok: false, message: `the kernel could not be interrupted: ${error?.message ?? error}` };
  }
  return { ok: false, message: "this page cannot reach the kernel: use the notebook's interrupt button (\u25a0)" };
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
