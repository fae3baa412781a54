// The breakdowns (Skyline's Figure 3): a run-time stacked bar and a memory stacked bar for the
// current drill level, plus the Back/Top/breadcrumb navigation above them. Segments are drawn
// from tree.js's level data; negative remainders (untracked time when the instrumented ops add up
// to more than the uninstrumented iteration) cannot have a width, so they are listed beside the
// bar as chips instead of being dropped. Hover, double-click and Enter are delegated: one
// listener per bar, not one per segment (a level can hold hundreds of ops). Module colours come
// from a hash of the module's path, so a module keeps its colour from one run to the next.

import { splitsOverTree } from "./categories.js";
import { h, ownKeys, setText } from "./dom.js";
import { formatPercent } from "./format.js";
import { cssPercent, fraction } from "./scale.js";

const PALETTE_SIZE = 10;
const SEGMENT = '[data-skyline="segment"]';

/** FNV-1a: a 32-bit hash of a string, the same in every run and every browser. */
export function hashString(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Palette colours for the module paths of one level: each path takes the colour its hash picks,
 * so a module keeps its colour across runs whatever its rank; a path whose colour a sibling took
 * first (paths in sorted order) takes the next free one, so siblings differ while the palette
 * lasts. Same set of paths, same colours. Returns Map path -> palette index.
 */
export function paletteColors(paths) {
  const colors = new Map();
  const used = new Set();
  for (const path of [...new Set(paths)].sort()) {
    let index = hashString(path) % PALETTE_SIZE;
    for (let tries = 0; used.has(index) && tries < PALETTE_SIZE; tries++) index = (index + 1) % PALETTE_SIZE;
    used.add(index);
    colors.set(path, index);
  }
  return colors;
}

/**
 * How each segment of a level is drawn, shared by both bars so a module looks the same in
 * both: a node that stands for a category (the optimizer, the untracked remainder) and a
 * category drawn as one segment take that category's colour; every other node its palette
 * colour (paletteColors). The texture is the one of that category, or of the segment's own
 * memory category (stripes mark weights). Returns s -> {palette: index|null, color, texture}.
 */
export function assignStyles(levels, categories) {
  const byKind = new Map(categories.filter((c) => c.nodeKind).map((c) => [c.nodeKind, c]));
  const byKey = new Map(categories.map((c) => [c.key, c]));
  const fixed = (s) => {
    const own = byKey.get(s.category);
    return byKind.get(s.kind) ?? (own && !splitsOverTree(own) ? own : null);
  };
  const colors = paletteColors(levels.flatMap((level) => level.segments.filter((s) => s.node && !fixed(s)).map((s) => s.path)));
  return (s) => {
    const category = fixed(s);
    return {
      palette: category ? null : colors.get(s.path) ?? 0,
      color: category?.color ?? null,
      texture: (category ?? byKey.get(s.category))?.texture ?? "plain",
    };
  };
}

/**
 * The memory legend: one entry per category drawn, in its texture. A category drawn as one
 * segment shows its own colour; one split over the tree is drawn in each module's colour, and
 * its swatch says so (a strip of module colours).
 */
function createLegend(categories) {
  if (!categories.length) return null;
  return h("div", { class: "sk-legend", data: { skyline: "legend" }, attrs: { "aria-hidden": "true" } }, categories.map((c) => {
    const byModule = splitsOverTree(c);
    return h("span", {
      class: "sk-legend-item",
      text: c.label,
      title: byModule ? `${c.label}: in the colour of each module` : undefined,
      data: { category: c.key, texture: c.texture, coloring: byModule ? "module" : "category" },
      style: c.color && !byModule ? { "--sk-swatch": c.color } : undefined,
    });
  }));
}

export function createNav({ signal, onBack, onTop, onCrumb }) {
  const back = h("button", { class: "sk-button", text: "\u2190 Back", data: { skyline: "back" }, attrs: { type: "button", title: "Up one level" } });
  const top = h("button", { class: "sk-button", text: "Top", data: { skyline: "top" }, attrs: { type: "button", title: "Back to the whole model" } });
  const crumbs = h("nav", { class: "sk-breadcrumb", data: { skyline: "breadcrumb" }, attrs: { "aria-label": "Drill path" } });
  back.addEventListener("click", onBack, { signal });
  top.addEventListener("click", onTop, { signal });
  crumbs.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-depth]");
    if (button) onCrumb(Number(button.dataset.depth));
  }, { signal });
  const el = h("div", { class: "sk-nav" }, [back, top, crumbs]);
  // Enter and Space press a focused button here, not the notebook's command for them.
  ownKeys(el, (e, target) => target.tagName === "BUTTON" && (e.key === "Enter" || e.key === " "), signal);

  function update(items, atTop) {
    back.disabled = atTop;
    top.disabled = atTop;
    crumbs.replaceChildren();
    items.forEach((c, i) => {
      if (i > 0) crumbs.append(h("span", { class: "sk-crumb-sep", text: "\u203a", attrs: { "aria-hidden": "true" } }));
      const last = i === items.length - 1;
      crumbs.append(last
        ? h("span", { class: "sk-crumb sk-crumb-current", text: c.name, attrs: { "aria-current": "location" }, data: { path: c.path } })
        : h("button", { class: "sk-crumb", text: c.name, data: { depth: c.depth, path: c.path }, attrs: { type: "button" } }));
    });
  }
  return { el, update };
}

/**
 * What a screen reader says of a segment, as its tooltip opens: the name, the category a
 * memory segment is of (a module holds parameters and activations, two segments of one name),
 * the value and its share: "lstm, activations: 1.2 MiB, 30.0%".
 */
function spoken(s, level, formatValue) {
  const category = s.spec && s.spec.label !== s.name ? `, ${s.spec.label}` : "";
  return `${s.name}${category}: ${formatValue(s.value)}, ${formatPercent(fraction(s.value, level.positive))}`;
}

/**
 * kind: "time" | "memory". Callbacks get the segment object (from tree.js) and the DOM event:
 * onHover(segment|null, event), onDrill(segment) and onBack() (up a level), each returning
 * whether the level moved, onSelect(segment) (click). legend: the
 * categories (categories.js drawnCategories) the legend names; none for no legend.
 */
export function createBreakdown({ kind, title, signal, formatValue, onHover, onDrill, onBack, canDrill, legend = [] }) {
  const totalText = h("span", { class: "sk-breakdown-total" });
  const predictedTag = h("span", { class: "sk-breakdown-tag" });
  const bar = h("div", { class: "sk-stack", attrs: { role: "list", "aria-label": title } });
  const negatives = h("div", { class: "sk-negatives" });
  const el = h("section", { class: `sk-breakdown sk-breakdown-${kind}`, data: { skyline: `breakdown-${kind}` } }, [
    h("div", { class: "sk-breakdown-head" }, [h("span", { class: "sk-breakdown-title", text: title }), totalText, predictedTag]),
    bar,
    negatives,
    createLegend(legend),
  ]);

  let level = { segments: [], total: 0, positive: 0 };
  const elements = new Map(); // segment key -> element
  const byElement = new WeakMap(); // element -> segment
  let hovered = null;

  function setLevel(next, styleOf) {
    level = next;
    elements.clear();
    const inBar = [];
    const outside = [];
    for (const s of level.segments) {
      const style = styleOf(s);
      const segEl = h("div", {
        class: `sk-seg${style.palette === null ? "" : ` sk-c${style.palette}`}${canDrill(s) ? " sk-drillable" : ""}`,
        data: { skyline: "segment", node: s.path, kind: s.kind, category: s.category, texture: style.texture },
        attrs: { role: "listitem", tabindex: 0, "aria-label": s.name },
        style: style.color ? { "--sk-seg": style.color } : undefined,
      }, [h("span", { class: "sk-seg-label", text: s.name })]);
      elements.set(s.key, segEl);
      byElement.set(segEl, s);
      (s.base < 0 ? outside : inBar).push(segEl);
    }
    bar.replaceChildren(...inBar);
    negatives.replaceChildren(...outside);
    if (!level.segments.length) bar.append(h("div", { class: "sk-empty", text: "nothing measured at this level" }));
    update(level, false);
  }

  /** Values changed (a drag): resize segments in place; the order within groups is unchanged. */
  function update(next, predicted) {
    level = next;
    for (const s of level.segments) {
      const segEl = elements.get(s.key);
      if (!segEl) continue;
      const negative = s.value < 0;
      segEl.classList.toggle("sk-negative", negative);
      // none at this size (a category the peak of a predicted size holds none of): not drawn
      segEl.classList.toggle("sk-seg-none", s.value === 0);
      if (negative) segEl.dataset.negative = "true";
      else delete segEl.dataset.negative;
      segEl.setAttribute("aria-label", spoken(s, level, formatValue));
      if (segEl.parentNode === bar) {
        segEl.style.width = cssPercent(fraction(Math.max(0, s.value), level.positive));
      } else {
        // A chip beside the bar has no width to show its size, so it says it in words.
        setText(segEl.firstChild, `${s.name} ${formatValue(s.value)}`);
      }
    }
    setText(totalText, formatValue(level.total));
    setText(predictedTag, predicted ? "predicted" : "");
  }

  function segmentOf(target) {
    const segEl = target instanceof Element ? target.closest(SEGMENT) : null;
    return segEl && el.contains(segEl) ? byElement.get(segEl) : null;
  }

  const opts = { signal };
  el.addEventListener("mouseover", (e) => {
    const s = segmentOf(e.target);
    if (s !== hovered) {
      hovered = s;
      onHover(s, e);
    }
  }, opts);
  el.addEventListener("mousemove", (e) => {
    if (hovered) onHover(hovered, e, true);
  }, opts);
  el.addEventListener("mouseleave", (e) => {
    hovered = null;
    onHover(null, e);
  }, opts);
  el.addEventListener("focusin", (e) => {
    const s = segmentOf(e.target);
    if (s) onHover(s, e);
  }, opts);
  el.addEventListener("focusout", (e) => onHover(null, e), opts);
  el.addEventListener("dblclick", (e) => {
    const s = segmentOf(e.target);
    if (s && canDrill(s)) {
      e.preventDefault();
      onDrill(s);
    }
  }, opts);
  // Enter on a focused segment is the segment's (it opens it), Backspace goes up a level, as in
  // a file browser; neither reaches the notebook. The new level's first segment takes the focus.
  ownKeys(el, (e, target) => {
    const s = e.key === "Enter" || e.key === "Backspace" ? segmentOf(target) : null;
    if (!s) return false;
    e.preventDefault();
    const moved = e.key === "Backspace" ? onBack() : canDrill(s) && onDrill(s);
    if (moved) focusFirst();
    return true;
  }, signal);

  function focusFirst() {
    (bar.querySelector(SEGMENT) || negatives.querySelector(SEGMENT))?.focus();
  }

  /**
   * Mark every segment of the node(s) in `paths` (a path, a Set of paths, or null). Both bars
   * get the same call, which is what links them.
   */
  function highlight(paths) {
    const set = paths === null || paths === undefined ? null : paths instanceof Set ? paths : new Set([paths]);
    for (const segEl of elements.values()) {
      const on = set !== null && set.has(segEl.dataset.node);
      if (segEl.classList.contains("sk-linked") !== on) segEl.classList.toggle("sk-linked", on);
    }
    el.classList.toggle("sk-has-highlight", set !== null && set.size > 0);
  }

  return {
    el,
    setLevel,
    update,
    highlight,
  };
}
