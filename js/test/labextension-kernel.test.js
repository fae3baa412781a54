// The companion extension's kernel side (js/labextension/kernel.js, index.js): the widget's
// Cancel interrupts the kernel of the widget's own notebook, and its watch hears that kernel's
// status changes; a widget outside every notebook gets no answer.
import { expect, test, vi } from "vitest";
import { interrupt, panelOf, statusOf, watch } from "../labextension/kernel.js";
import plugin from "../labextension/index.js";
import { askHost, EVENTS } from "../shared/protocol.js";

/** A Lumino signal, as far as the extension uses one. */
function signal() {
  const slots = new Set();
  return { slots, connect: (slot) => slots.add(slot), disconnect: (slot) => slots.delete(slot), emit: (value) => [...slots].forEach((slot) => slot(null, value)) };
}

function panel(kernel = { id: "k1", status: "busy", interrupt: vi.fn(async () => {}) }) {
  const node = document.body.appendChild(document.createElement("div"));
  const sessionContext = { session: kernel ? { kernel } : null, statusChanged: signal(), kernelChanged: signal() };
  return { node, sessionContext, kernel, output: node.appendChild(document.createElement("span")) };
}

test("panelOf: only the notebook panel holding the widget", () => {
  const a = panel();
  const b = panel();
  const other = { node: document.createElement("div") }; // not a notebook
  expect(panelOf([other, a, b], b.output)).toBe(b);
  expect(panelOf([a], b.output)).toBe(null);
  expect(panelOf([a, b], null)).toBe(null);
});

test("interrupt: the panel's kernel, or why not", async () => {
  const p = panel();
  expect(await interrupt(p)).toEqual({ ok: true, message: "" });
  expect(p.kernel.interrupt).toHaveBeenCalledOnce();
  expect(await interrupt(panel(null))).toEqual({ ok: false, message: "this notebook has no running kernel" });
  const failing = panel({ id: "k", status: "dead", interrupt: async () => { throw new Error("gone"); } });
  expect(await interrupt(failing)).toEqual({ ok: false, message: "the kernel could not be interrupted: gone" });
});

test("watch: every status change, a shutdown as none, another kernel as changed; then nothing", () => {
  const p = panel();
  expect(statusOf(p)).toBe("busy");
  expect(statusOf(panel(null))).toBe("none");
  const seen = [];
  const unwatch = watch(p, (status) => seen.push(status));
  p.sessionContext.statusChanged.emit("restarting");
  p.sessionContext.statusChanged.emit("idle");
  p.sessionContext.kernelChanged.emit({ oldValue: { id: "k1" }, newValue: { id: "k1" } }); // reconnected
  p.sessionContext.kernelChanged.emit({ oldValue: { id: "k1" }, newValue: { id: "k2" } });
  p.sessionContext.kernelChanged.emit({ oldValue: { id: "k2" }, newValue: null });
  expect(seen).toEqual(["restarting", "idle", "changed", "none"]);
  unwatch();
  expect(p.sessionContext.statusChanged.slots.size + p.sessionContext.kernelChanged.slots.size).toBe(0);
});

test("the plugin answers the widget's events from inside its notebook only", async () => {
  const p = panel();
  const app = { shell: { widgets: () => [p][Symbol.iterator](), currentWidget: null } };
  plugin.activate(app);

  const answered = askHost(p.output, EVENTS.INTERRUPT, {});
  expect(await answered.result).toEqual({ ok: true, message: "" });
  expect(p.kernel.interrupt).toHaveBeenCalledOnce();

  const statuses = [];
  const watched = askHost(p.output, EVENTS.WATCH, { onStatus: (s) => statuses.push(s) });
  expect(watched.status).toBe("busy");
  p.sessionContext.statusChanged.emit("idle");
  watched.unwatch();
  p.sessionContext.statusChanged.emit("busy");
  expect(statuses).toEqual(["idle"]);

  const outside = document.body.appendChild(document.createElement("div"));
  expect(askHost(outside, EVENTS.INTERRUPT, {})).toBe(null);
  expect(askHost(outside, EVENTS.WATCH, { onStatus: () => {} })).toBe(null);
  expect(p.kernel.interrupt).toHaveBeenCalledOnce();
});
