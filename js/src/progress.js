// The widget's status while its kernel works for it: what it does (the `status` trait), the
// profile's stage, the time elapsed and an estimate of the time left (the `progress` trait,
// set by the kernel as each stage starts: {stage, done, elapsed_s, remaining_s, notice}), a bar,
// a notice the user may act on before the run ends (one torch thread measured far faster on a
// busy machine), and Cancel. Between stage starts the clock and the bar move on here, at the
// pace of the estimate; the bar never moves back within a run and stops short of the end until
// the run ends. After an interrupted run (`progress` {cancelled, stage, elapsed_s}) it says
// "Cancelled".
//
// Nothing here animates: the clock's text and the bar change once a second, and that is all the
// browser redraws. A spinner and a bar easing between ticks redrew the page at its frame rate for
// the whole profile, and a browser on the kernel's own cores (a laptop, a 2-core VM) took that
// CPU from the iterations being timed: with JupyterLab and Chromium on 2 cores, 7 of 12
// re-profiles of the quickstart had times too scattered to fit with them, 2 of 12 without
// (BENCHMARKS.md, "The widget's own cost").
//
// Cancel interrupts the kernel through the notebook (kernel.js `interruptKernel`), which stops
// the work as it stops a cell: the work runs on the kernel's main thread, as a cell does
// (skyline_nb/mainthread.py), where no message is read before it ends.

import { h, setText } from "./dom.js";
import { interruptKernel, isLive, kernelLiveness, onLiveness } from "./kernel.js";

const TICK_MS = 1000;
const MAX_BEFORE_END = 0.99;

/** Seconds as the widget and the command line show them: "7 s", "2 min 05 s". */
export function formatDuration(seconds) {
  const s = Math.max(0, Math.round(Number(seconds) || 0));
  if (s < 60) return `${s} s`;
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

function sentence(text) {
  const t = String(text || "");
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function clamp01(x) {
  return Math.min(1, Math.max(0, Number(x) || 0));
}

/**
 * Where a profile is `sinceS` seconds after progress `p` arrived: {done, elapsedS, remainingS}
 * (remainingS null while there is no estimate). With an estimate, the share done moves on as
 * the time left runs down, short of the end.
 */
export function progressAt(p, sinceS) {
  const done = clamp01(p.done);
  const elapsedS = (Number(p.elapsed_s) || 0) + sinceS;
  const estimate = Number(p.remaining_s);
  if (p.remaining_s === null || p.remaining_s === undefined || !Number.isFinite(estimate)) {
    return { done, elapsedS, remainingS: null };
  }
  const ran = estimate > 0 ? Math.min(1, sinceS / estimate) : 1;
  return { done: Math.max(done, Math.min(done + (1 - done) * ran, MAX_BEFORE_END)), elapsedS, remainingS: Math.max(0, estimate - sinceS) };
}

/** What the clock says after the time elapsed (as the command line's ``format_progress``). */
function timeLeft({ done, remainingS }) {
  if (done >= 1) return "";
  if (remainingS === null) return " \u00b7 estimating the time left";
  return remainingS < 1 ? " \u00b7 almost done" : ` \u00b7 about ${formatDuration(remainingS)} left`;
}

export function createProgress({ model, el, signal }) {
  const text = h("span", { class: "sk-status-text", attrs: { "aria-live": "polite" } });
  const cancel = h("button", { class: "sk-button sk-cancel", text: "Cancel", data: { skyline: "cancel" }, attrs: { type: "button", title: "Interrupt the kernel: stop this run, leaving the kernel as it was" } });
  const fill = h("div", { class: "sk-progress-fill" });
  const bar = h("div", { class: "sk-progress", data: { skyline: "progress" }, attrs: { role: "progressbar", "aria-label": "Share of the profile done", "aria-valuemin": "0", "aria-valuemax": "100" } }, [fill]);
  const stage = h("span", { class: "sk-progress-stage", data: { skyline: "progress-stage" }, attrs: { "aria-live": "polite" } });
  const clock = h("span", { class: "sk-progress-clock", data: { skyline: "progress-clock" } });
  const problem = h("div", { class: "sk-cancel-problem", data: { skyline: "cancel-problem" }, attrs: { role: "alert", hidden: "" } });
  // what the user may act on before the run ends (one torch thread measured far faster)
  const notice = h("div", { class: "sk-progress-notice", data: { skyline: "progress-notice" }, attrs: { role: "status", hidden: "" } });
  const status = h("div", { class: "sk-status", data: { skyline: "status" }, attrs: { hidden: "" } }, [
    h("div", { class: "sk-status-line" }, [text, cancel]),
    bar,
    h("div", { class: "sk-progress-detail" }, [stage, clock]),
    notice,
    problem,
  ]);
  const cancelled = h("div", { class: "sk-cancelled", data: { skyline: "cancelled" }, attrs: { role: "status", hidden: "" } });
  const root = h("div", { class: "sk-progress-slot" }, [status, cancelled]);

  let run = null; // {started, progress, received, shown}: the run in progress, as seen here
  let timer = null;

  function current() {
    const p = typeof model.get === "function" ? model.get("progress") : null;
    return p && typeof p === "object" ? p : {};
  }

  function running() {
    return Boolean(model.get("status")) && kernelLiveness(model).state !== "gone";
  }

  function tick() {
    const p = current();
    const now = performance.now();
    const sinceS = (now - run.received) / 1000;
    const staged = typeof p.stage === "string" && !p.cancelled;
    setText(stage, staged ? sentence(p.stage) : "");
    if (!staged) {
      bar.hidden = true;
      setText(clock, `${formatDuration((now - run.started) / 1000)} elapsed`);
      return;
    }
    const at = progressAt(p, sinceS);
    run.shown = Math.max(run.shown, at.done);
    bar.hidden = false;
    fill.style.width = `${(run.shown * 100).toFixed(1)}%`;
    bar.setAttribute("aria-valuenow", String(Math.round(run.shown * 100)));
    setText(clock, `${formatDuration(at.elapsedS)} elapsed${timeLeft({ done: clamp01(p.done), remainingS: at.remainingS })}`);
  }

  function showCancelled(p) {
    cancelled.hidden = !p.cancelled;
    if (!p.cancelled) return;
    const stage = p.stage ? `, during \u201c${p.stage}\u201d` : "";
    setText(cancelled, `Cancelled after ${formatDuration(p.elapsed_s)}${stage}. The kernel was interrupted and is as it was before this run.`);
  }

  function update() {
    const p = current();
    showCancelled(p);
    if (!running()) {
      status.hidden = true;
      run = null;
      clearInterval(timer);
      timer = null;
      return;
    }
    const now = performance.now();
    if (!run) {
      run = { started: now, progress: null, received: now, shown: 0 };
      cancel.disabled = false;
      setText(cancel, "Cancel");
      problem.hidden = true;
    }
    if (p !== run.progress) Object.assign(run, { progress: p, received: now });
    status.hidden = false;
    cancel.hidden = !isLive(model);
    setText(text, model.get("status"));
    const said = typeof p.notice === "string" && !p.cancelled ? p.notice : "";
    notice.hidden = !said;
    setText(notice, said);
    tick();
    timer ??= setInterval(tick, TICK_MS);
  }

  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    setText(cancel, "Cancelling\u2026");
    const result = await interruptKernel(model, el);
    if (result.ok || !run) return;
    cancel.disabled = false;
    setText(cancel, "Cancel");
    problem.hidden = false;
    setText(problem, `Not cancelled: ${result.message}.`);
  }, { signal });
  onLiveness(model, update, signal);
  signal.addEventListener("abort", () => clearInterval(timer));

  update();
  return { el: root, update };
}
