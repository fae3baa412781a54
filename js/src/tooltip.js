// One tooltip per view, positioned at the pointer with `position: fixed` so the notebook's
// scrolling output area cannot clip it. Content is a list of lines set as text.

import { h } from "./dom.js";

export function createTooltip(container) {
  const el = h("div", { class: "sk-tooltip", data: { skyline: "tooltip" }, attrs: { role: "tooltip", hidden: "" } });
  container.append(el);

  /** lines: [{text, class?}] — the first line is the title. */
  function show(lines, clientX, clientY) {
    el.replaceChildren(...lines.map((l, i) => h("div", { class: l.class || (i === 0 ? "sk-tooltip-title" : ""), text: l.text })));
    el.hidden = false;
    place(clientX, clientY);
  }

  function place(clientX, clientY) {
    const margin = 12;
    const width = el.offsetWidth || 0;
    const height = el.offsetHeight || 0;
    const vw = window.innerWidth || 0;
    const vh = window.innerHeight || 0;
    // Flip to the other side of the pointer near the window's right/bottom edges.
    let x = clientX + margin;
    let y = clientY + margin;
    if (vw && x + width > vw) x = Math.max(0, clientX - margin - width);
    if (vh && y + height > vh) y = Math.max(0, clientY - margin - height);
    el.style.left = `${x}px`;
    el.style.top = `${y}px`;
    // A transformed ancestor makes `fixed` relative to it instead of the window; measure where
    // the tooltip landed and shift by the difference so it sits at the pointer either way.
    const rect = el.getBoundingClientRect();
    if (rect.width && (Math.abs(rect.left - x) > 0.5 || Math.abs(rect.top - y) > 0.5)) {
      el.style.left = `${2 * x - rect.left}px`;
      el.style.top = `${2 * y - rect.top}px`;
    }
  }

  function hide() {
    el.hidden = true;
  }

  return { el, show, hide, move: place };
}
