// The code view: the cells/files behind the current drill level, with a marker on each
// profiled line for its time and memory within that level (see lines.js for the attribution).
// Hovering a breakdown segment highlights its lines; clicking a line selects it and tells the
// page with a bubbling `skyline-reveal-line` event, which a notebook front end can use to
// scroll the source cell into view. A marker's tooltip names the parts of the level that ran
// its line the way the bars name them ("addmm × 49"), largest first.

import { h } from "./dom.js";
import { formatBytes, formatFrame, formatMs, formatPercent, formatSourceName } from "./format.js";
import { addHeld, heldCategories, lineKey, lineStats, sourcesFor } from "./lines.js";
import { cssPercent, fraction } from "./scale.js";
import { nodeLabel, scaledTime } from "./tree.js";

const WINDOW_ABOVE = 150; // longer sources show only the profiled lines and some context
const CONTEXT = 3;
const MAX_PARTS_NAMED = 3;

function splitLines(code) {
  return String(code ?? "").split(/\r\n|\r|\n/);
}

/** "ran: addmm × 12 1.2 ms, tanh_ × 12 0.4 ms, 3 more", times at `scale`; none if no parts. */
function partsText(parts, scale) {
  const sorted = [...parts.values()].sort((a, b) => b.timeMs - a.timeMs);
  if (!sorted.length) return [];
  const named = sorted.slice(0, MAX_PARTS_NAMED).map((p) => `${p.label} ${formatMs(scaledTime(scale, p.timeMs, p.optimizerMs))}`);
  const more = sorted.length - named.length;
  return [`ran: ${named.join(", ")}${more > 0 ? `, ${more} more` : ""}`];
}

/** Line numbers (1-based) to render: all of a short source, else marked lines ± CONTEXT. */
function visibleLines(count, marked) {
  if (count <= WINDOW_ABOVE) return Array.from({ length: count }, (_, i) => i + 1);
  const keep = new Set();
  for (const line of marked) {
    for (let l = Math.max(1, line - CONTEXT); l <= Math.min(count, line + CONTEXT); l++) keep.add(l);
  }
  return [...keep].sort((a, b) => a - b);
}

/** Bytes a line holds for a node of the level (the optimizer's state: lines.js addHeld). */
const heldSum = (stat) => [...stat.held.values()].reduce((a, b) => a + b, 0);

export function createCodeView({ signal, onSelectLine }) {
  const head = h("div", { class: "sk-code-head" });
  const body = h("div", { class: "sk-code-body" });
  const el = h("section", { class: "sk-code", data: { skyline: "code-view" } }, [head, body]);
  const rows = new Map(); // lineKey -> row element
  let selected = null;

  let markers = []; // {stat, file, line, cellId, el, time, mem, text}: repainted by rescale()

  /** optimizer: whether `node` is in the optimizer step (tree.js inOptimizer). */
  function setLevel({ node, isRoot, report, optimizer }) {
    rows.clear();
    markers = [];
    selected = null;
    const stats = addHeld(lineStats(node, report.weights, isRoot, optimizer), heldCategories(report, node, isRoot));
    const sources = sourcesFor(report.sources, stats);
    // Inclusive, as a line profiler's: a call's line holds what it calls, so lines that call
    // one another add up to more than the level (the head says so, not only the tooltips). A
    // backward op is timed with the forward op that made it (operations.py), so `loss.backward()`
    // holds only what no forward op made: said here, or its few µs read as the backward pass.
    head.replaceChildren(
      h("span", { text: `Source of ${nodeLabel(node)}: time and memory per line` }),
      h("span", { class: "sk-code-head-note", text: " \u00b7 inclusive: a line holds what it calls, so lines add up to more than the whole; an op's backward counts on the line of its forward; memory: the most its ops hold saved for backward at once (a line run in a loop whose runs free theirs in turn holds one run's), plus parameters, gradients and optimizer state created there" }),
    );
    body.replaceChildren();
    if (!sources.length) {
      body.append(h("div", { class: "sk-empty", text: stats.size
        ? "The profiled lines are in files this report does not include."
        : "No source lines were recorded for this level." }));
      return;
    }
    for (const source of sources) body.append(renderSource(source, stats));
  }

  /**
   * Paint every marker for a scale (tree.js scaleFor: measured, or predicted while dragging)
   * and the level's totals at that scale: time as the breakdown's segments (tree.js scaledTime),
   * activations with the batch, weights and grads stay.
   */
  function rescale(scale, totals) {
    const values = markers.map(({ stat }) => ({
      timeMs: scaledTime(scale, stat.timeMs, stat.optimizerMs),
      activationBytes: stat.activationBytes * scale.activationFactor,
      bytes: stat.activationBytes * scale.activationFactor + stat.weightBytes + heldSum(stat),
    }));
    const maxTime = Math.max(0, ...values.map((v) => v.timeMs));
    const maxBytes = Math.max(0, ...values.map((v) => v.bytes));
    markers.forEach((m, i) => {
      const v = values[i];
      m.el.title = [
        formatFrame({ file: m.file, line: m.line, cell_id: m.cellId }),
        `time ${formatMs(v.timeMs)}, with what it calls (${formatPercent(fraction(v.timeMs, totals.time))} of this level)`,
        // saved for backward (node.activation_bytes), as the segments' tooltips say: not the
        // memory bar's "activations", which are the forward outputs alive at the peak
        `saved for backward ${formatBytes(v.activationBytes)}, parameters + gradients created here ${formatBytes(m.stat.weightBytes)}`
          + [...m.stat.held].map(([label, bytes]) => `, ${label} ${formatBytes(bytes)}`).join("")
          + ` (${formatPercent(fraction(v.bytes, totals.memory))} of this level's memory)`,
        ...partsText(m.stat.parts, scale),
        ...(scale.predicted ? [`predicted at batch size ${scale.batch}`] : []),
      ].join("\n");
      m.time.style.width = cssPercent(fraction(v.timeMs, maxTime));
      m.mem.style.width = cssPercent(fraction(v.bytes, maxBytes));
      m.text.textContent = `${formatMs(v.timeMs)} \u00b7 ${formatBytes(v.bytes)}`;
      m.el.classList.toggle("sk-predicted", scale.predicted);
    });
  }

  function renderSource(source, stats) {
    const lines = splitLines(source.code);
    const marked = [...stats.values()].filter((e) => e.file === source.file).map((e) => e.line);
    const name = formatSourceName(source.file, source.cell_id);
    const list = h("div", { class: "sk-code-lines", attrs: { role: "list" } });
    let previous = 0;
    for (const n of visibleLines(lines.length, marked)) {
      if (n > previous + 1) list.append(h("div", { class: "sk-code-gap", text: `\u22ef ${n - previous - 1} lines` }));
      previous = n;
      const stat = stats.get(lineKey(source.file, n));
      list.append(renderLine(source, n, lines[n - 1], stat));
    }
    if (lines.length > previous) list.append(h("div", { class: "sk-code-gap", text: `\u22ef ${lines.length - previous} lines` }));
    return h("div", { class: "sk-code-file", data: { file: source.file } }, [
      h("div", { class: "sk-code-file-name", text: name, title: source.file }),
      list,
    ]);
  }

  function renderLine(source, n, text, stat) {
    const cells = [h("span", { class: "sk-ln", text: String(n) })];
    if (stat) {
      const time = h("span", { class: "sk-marker-time" });
      const mem = h("span", { class: "sk-marker-mem" });
      const label = h("span", { class: "sk-marker-text" });
      const el = h("span", { class: "sk-marker", data: { skyline: "line-marker", line: n } }, [
        h("span", { class: "sk-marker-bars", attrs: { "aria-hidden": "true" } }, [time, mem]),
        label,
      ]);
      markers.push({ stat, file: source.file, line: n, cellId: source.cell_id, el, time, mem, text: label });
      cells.push(el);
    } else {
      cells.push(h("span", { class: "sk-marker sk-marker-none" }));
    }
    cells.push(h("code", { class: "sk-code-text", text: text === "" ? " " : text }));
    const row = h("div", {
      class: `sk-code-line${stat ? " sk-profiled" : ""}`,
      data: { line: n, file: source.file, cellId: source.cell_id ?? undefined },
      attrs: { role: "listitem", tabindex: stat ? 0 : null, "aria-selected": "false" },
    }, cells);
    rows.set(lineKey(source.file, n), row);
    return row;
  }

  function select(row) {
    if (selected) {
      selected.classList.remove("sk-selected");
      selected.setAttribute("aria-selected", "false");
    }
    selected = row;
    row.classList.add("sk-selected");
    row.setAttribute("aria-selected", "true");
    const detail = { cellId: row.dataset.cellId ?? null, file: row.dataset.file, line: Number(row.dataset.line) };
    onSelectLine(lineKey(detail.file, detail.line));
    row.dispatchEvent(new CustomEvent("skyline-reveal-line", { bubbles: true, composed: true, detail }));
  }

  body.addEventListener("click", (e) => {
    const row = e.target instanceof Element ? e.target.closest(".sk-code-line") : null;
    if (row) select(row);
  }, { signal });
  body.addEventListener("keydown", (e) => {
    const row = e.target instanceof Element ? e.target.closest(".sk-code-line") : null;
    if (row && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      select(row);
    }
  }, { signal });

  /** Highlight the lines in `keys` (a Set of lineKey) or none. */
  function highlight(keys) {
    for (const [key, row] of rows) {
      const on = Boolean(keys && keys.has(key));
      if (row.classList.contains("sk-highlight") !== on) row.classList.toggle("sk-highlight", on);
    }
  }

  return { el, setLevel, rescale, highlight };
}
