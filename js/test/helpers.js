// Shared test helpers: fixtures from tests/fixtures and a fake anywidget model.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import widget from "../src/index.js";

// vitest runs from the repository root (vitest.config.mjs); jsdom's import.meta.url is not a
// file URL, so paths are resolved from there.
export function fixturePath(name) {
  return resolve(process.cwd(), "tests/fixtures", name);
}

/** A fresh copy of a fixture report (tests may mutate it). */
export function loadReport(name) {
  return JSON.parse(readFileSync(fixturePath(`report_${name}.json`), "utf8"));
}

/** The subset of anywidget's model API the widget uses, with change events. */
export function fakeModel(state = {}) {
  const values = { report: {}, status: "", error: "", selected_batch_size: null, edit_target: {}, ...state };
  const listeners = new Map();
  const model = {
    saved: 0,
    get: (name) => values[name],
    set(name, value) {
      values[name] = value;
      for (const cb of listeners.get(`change:${name}`) || []) cb();
    },
    on(name, cb) {
      if (!listeners.has(name)) listeners.set(name, new Set());
      listeners.get(name).add(cb);
    },
    off(name, cb) {
      listeners.get(name)?.delete(cb);
    },
    save_changes() {
      model.saved += 1;
    },
    listenerCount: () => [...listeners.values()].reduce((n, s) => n + s.size, 0),
    // What the kernel would deliver: model.emit("msg:custom", {kind: "pong"}).
    emit: (name, ...args) => {
      for (const cb of listeners.get(name) || []) cb(...args);
    },
  };
  return model;
}

/** Render the widget into a fresh element attached to the document. */
export function mount(state) {
  const model = fakeModel(state);
  const el = document.createElement("div");
  document.body.append(el);
  const cleanup = widget.render({ model, el });
  const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
  const qa = (name) => [...el.querySelectorAll(`[data-skyline="${name}"]`)];
  return {
    model,
    el,
    q,
    qa,
    unmount() {
      cleanup();
      el.remove();
    },
  };
}

/** Give an element a layout box (jsdom has none). */
export function setRect(el, { left = 0, top = 0, width = 40, height = 200 } = {}) {
  el.getBoundingClientRect = () => ({
    left, top, width, height, right: left + width, bottom: top + height, x: left, y: top, toJSON() {},
  });
}

export function pointer(el, type, { clientY = 0, clientX = 0, pointerId = 1 } = {}) {
  el.dispatchEvent(new PointerEvent(type, { bubbles: true, cancelable: true, clientX, clientY, pointerId, button: 0 }));
}

export function key(el, k) {
  el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));
}
