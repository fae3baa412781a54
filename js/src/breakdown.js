// The breakdowns (Skyline's Figure 3): a run-time stacked bar and a memory stacked bar for the
// current drill level, plus the Back/Top/breadcrumb navigation above them. Segments are drawn
// from tree.js's level data; negative remainders (untracked time when the instrumented ops add up
// to more than the uninstrumented iteration) cannot have a width, so they are listed beside the
// bar as chips instead of being dropped. Hover, double-click and Enter are delegated: one
// listener per bar, not one per segment (a level can hold hundreds of ops).

import { splitsOverTree } from "./categories.js";
import { h, setText } from "./dom.js";
import { cssPercent, fraction } from "./scale.js";

const PALETTE_SIZE = 10;
const SEGMENT = '[data-skyline="segment"]';

/**
 * How each segment of a level is drawn, shared by both bars so a module looks the same in
 * both: a node that stands for a category (the optimizer, the untracked remainder) and a
 * category drawn as one segment take that category's colour; every other node a stable
 * palette colour. The texture is the one of that category, or of the segment's own memory
 * category (stripes mark weights). Returns s -> {palette: index|null, color, texture}.
 */
export function assignStyles(levels, categories) {
  const byKind = new Map(categories.filter((c) => c.nodeKind).map((c) => [c.nodeKind, c]));
  const byKey = new Map(categories.map((c) => [c.key, c]));
  const fixed = (s) => {
    const own = byKey.get(s.category);
    return byKind.get(s.kind) ?? (own && !splitsOverTree(own) ? own : null);
  };
  const colors = new Map();
  for (const level of levels) {
    for (const s of level.segments) {
      if (s.node && !colors.has(s.path) && !fixed(s)) colors.set(s.path, colors.size % PALETTE_SIZE);
    }
  }
  return (s) => {
    const category = fixed(s);
    return {
      palette: category ? null : colors.get(s.path) ?? 0,
      color: category?.color ?? null,
      texture: (category ?? byKey.get(s.category))?.texture ?? "plain",
    };
  };
}

/** The memory legend: one entry per category drawn, in the category's colour and texture. */
function createLegend(categories) {
  if (!categories.length) return null;
  return h("div", { class: "sk-legend", data: { skyline: "legend" }, attrs: { "aria-hidden": "true" } }, categories.map((c) => h("span", {
    class: "sk-legend-item",
    text: c.label,
    data: { category: c.key, texture: c.texture },
    // Colours of categories split over the tree name modules, so their swatch shows the texture only.
    style: c.color && !splitsOverTree(c) ? { "--sk-swatch": c.color } : undefined,
  })));
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
 * kind: "time" | "memory". Callbacks get the segment object (from tree.js) and the DOM event:
 * onHover(segment|null, event), onDrill(segment), onSelect(segment) (click). legend: the
 * categories (categories.js drawnCategories) the legend names; none for no legend.
 */
export function createBreakdown({ kind, title, signal, formatValue, onHover, onDrill, canDrill, legend = [] }) {
  const totalText = h("span", { class: "sk-breakdown-total" });
  const predictedTag = h("span", { class: "sk-breakdown-tag" });
  const bar = h("div", { class: "sk-stack", attrs: { role: "list" } });
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
      if (negative) segEl.dataset.negative = "true";
      else delete segEl.dataset.negative;
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
  el.addEventListener("keydown", (e) => {
    const s = segmentOf(e.target);
    if (s && e.key === "Enter" && canDrill(s)) {
      e.preventDefault();
      onDrill(s);
    }
  }, opts);

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
