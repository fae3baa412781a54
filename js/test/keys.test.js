// A focused part of the widget owns the keys it handles: the notebook's shortcut handlers, which
// listen on the document (Notebook 7 in the capture phase, JupyterLab in the bubble phase), never
// see them; other keys (Ctrl+S, Tab) still reach them; Esc hands focus back to the notebook.
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { loadReport, mount } from "./helpers.js";

let view;
let seen; // keys the "notebook" saw: [phase, key]
const capture = (e) => seen.push(["capture", e.key]);
const bubble = (e) => seen.push(["bubble", e.key]);

beforeEach(() => {
  seen = [];
  document.addEventListener("keydown", capture, true);
  document.addEventListener("keydown", bubble);
});

afterEach(() => {
  view?.unmount();
  view = null;
  document.removeEventListener("keydown", capture, true);
  document.removeEventListener("keydown", bubble);
  vi.useRealTimers();
});

function press(el, key, mods = {}) {
  const e = new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...mods });
  el.dispatchEvent(e);
  return e;
}

const predicted = () => Number(view.q("predicted-batch-size").textContent);

describe("the key-metric bars", () => {
  test("arrows, Page, Home/End and Enter move the bar and never reach the notebook", () => {
    view = mount({ report: loadReport("small") });
    const bar = view.q("throughput-bar");
    bar.focus();
    const up = press(bar, "ArrowUp");
    expect(predicted()).toBe(33);
    expect(up.defaultPrevented).toBe(true); // the page does not scroll
    press(bar, "PageUp");
    expect(predicted()).toBe(36);
    for (const key of ["ArrowDown", "PageDown", "Home", "End", "ArrowLeft", "ArrowRight", "Enter"]) press(bar, key);
    expect(seen).toEqual([]);
  });

  test("keys with a modifier, Tab and keys the bar does not use go on to the notebook", () => {
    view = mount({ report: loadReport("small") });
    const bar = view.q("memory-bar");
    press(bar, "s", { ctrlKey: true });
    press(bar, "ArrowUp", { shiftKey: true });
    press(bar, "Tab");
    press(bar, "a");
    expect(predicted()).toBe(32);
    expect(seen.filter(([phase]) => phase === "bubble").map(([, key]) => key)).toEqual(["s", "ArrowUp", "Tab", "a"]);
  });

  test("Esc commits what the keys chose and hands focus to the cell around the output", () => {
    vi.useFakeTimers();
    const cell = document.createElement("div");
    cell.tabIndex = -1;
    document.body.append(cell);
    view = mount({ report: loadReport("small") });
    cell.append(view.el);
    const bar = view.q("throughput-bar");
    bar.focus();
    press(bar, "ArrowUp");
    expect(view.model.get("selected_batch_size")).toBe(null);
    press(bar, "Escape");
    expect(document.activeElement).toBe(cell);
    expect(view.model.get("selected_batch_size")).toBe(33);
    expect(seen).toEqual([]);
    // Focus is the notebook's again: its keys reach it.
    press(cell, "ArrowUp");
    expect(seen).toEqual([["capture", "ArrowUp"], ["bubble", "ArrowUp"]]);
    cell.remove();
  });

  test("a bar that cannot be dragged keeps no key but Esc", () => {
    const report = loadReport("small");
    report.models.can_manipulate = false;
    view = mount({ report });
    const bar = view.q("throughput-bar");
    bar.focus();
    press(bar, "ArrowUp");
    expect(predicted()).toBe(32);
    press(bar, "Escape");
    expect(document.activeElement).not.toBe(bar);
    expect(seen.map(([, key]) => key)).toEqual(["ArrowUp", "ArrowUp"]);
  });

  test("the keys go with the view: none is taken after cleanup", () => {
    view = mount({ report: loadReport("small") });
    const bar = view.q("throughput-bar");
    view.unmount();
    document.body.append(bar);
    press(bar, "ArrowUp");
    expect(seen.length).toBe(2);
    bar.remove();
    view = null;
  });
});

describe("the breakdowns", () => {
  test("Enter on a segment opens it and stays in the widget", () => {
    view = mount({ report: loadReport("small") });
    const segment = view.q("breakdown-time").querySelector('[data-node="fc1"]');
    press(segment, "Enter");
    expect(view.q("breadcrumb").textContent).toBe("MLP\u203afc1");
    expect(seen).toEqual([]);
  });

  test("Backspace on a segment goes up a level; the focus stays on the breakdown", () => {
    view = mount({ report: loadReport("small") });
    press(view.q("breakdown-time").querySelector('[data-node="fc1"]'), "Enter");
    const inside = document.activeElement;
    expect(inside.dataset.skyline).toBe("segment"); // the opened level's first segment
    expect(inside.closest('[data-skyline="breakdown-time"]')).not.toBeNull();
    const e = press(inside, "Backspace");
    expect(e.defaultPrevented).toBe(true); // not the browser's, nor the notebook's
    expect(view.q("breadcrumb").textContent).toBe("MLP");
    expect(document.activeElement.dataset.skyline).toBe("segment");
    press(document.activeElement, "Backspace"); // at the top: nothing moves
    expect(view.q("breadcrumb").textContent).toBe("MLP");
    expect(seen).toEqual([]);
  });

  test("a segment's spoken label has its category, value and share", () => {
    view = mount({ report: loadReport("small") });
    const labels = [...view.q("breakdown-memory").querySelectorAll('[data-skyline="segment"]')].map((e) => e.getAttribute("aria-label"));
    // a module holds parameters and activations: two segments of one name, told apart
    expect(labels.slice(0, 3)).toEqual(["fc1, parameters: 1.53 MiB, 41.9%", "fc2, parameters: 20 KiB, 0.5%", "fc1, activations: 98 KiB, 2.6%"]);
    expect(labels).toContain("fc1, gradients: 1.53 MiB, 41.9%"); // gradients split by module too
    expect(labels).toContain("other: 343 KiB, 9.1%"); // a category's own segment: named once
    expect(view.q("breakdown-time").querySelector('[role="list"]').getAttribute("aria-label")).toBe("Run time");
  });

  test("Enter and Space on Back / Top / a crumb are the button's", () => {
    view = mount({ report: loadReport("small") });
    press(view.q("breakdown-time").querySelector('[data-node="fc1"]'), "Enter");
    const back = view.q("back");
    const e = press(back, "Enter");
    press(back, " ");
    expect(e.defaultPrevented).toBe(false); // the browser still presses the button
    expect(seen).toEqual([]);
  });
});
