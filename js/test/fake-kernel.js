// A fake kernel object behind anywidget's `experimental.invoke` (what skyline_nb/live.py serves).
import { connectKernel, pingKernel } from "../src/kernel.js";

/**
 * `answers[name](msg)` is the kernel's response to command `name` (undefined: it never answers,
 * like a notebook reopened with no kernel object behind the widget). `calls` records each
 * request; a request whose signal aborts rejects, as anywidget's invoke does.
 */
export function fakeKernel(answers = { ping: () => ({ ok: true }) }) {
  const calls = [];
  const invoke = (name, msg, { signal } = {}) => new Promise((resolve, reject) => {
    calls.push({ name, msg });
    signal?.addEventListener("abort", () => reject(signal.reason));
    const reply = answers[name]?.(msg);
    if (reply !== undefined) queueMicrotask(() => resolve([reply, []]));
  });
  return { invoke, calls };
}

/** `model` with a comm and a kernel object that answers its ping and `locate` with `locate`. */
export async function servedModel(model, locate) {
  model.send ??= () => {};
  const kernel = fakeKernel({ ping: () => ({ ok: true }), locate });
  connectKernel(model, kernel.invoke);
  await pingKernel(model);
  return kernel;
}

/** A `locate` double: the kernel's answer for a cell whose one literal follows `batch_size=`. */
export function locateLiteral({ code, batch_size: batch }) {
  const match = /(?<=batch_size=)[0-9]+/.exec(code);
  if (!match) return { ok: false, reason: "no literal" };
  const edit = { start: match.index, end: match.index + match[0].length, expected: match[0], text: String(batch) };
  return { ok: true, edit };
}
