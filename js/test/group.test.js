import { afterEach, describe, expect, test } from "vitest";
import { formatBytes, formatMs } from "../src/format.js";
import { groupRepeatedOps } from "../src/group.js";
import { lineStats } from "../src/lines.js";
import { indexTree, memorySegments, nodeTime, timeSegments } from "../src/tree.js";
import { key, loadReport, mount } from "./helpers.js";

const FIELDS = ["weight_bytes", "grad_bytes", "activation_bytes", "peak_activation_bytes"];
const ADDMM = 49;
const SIGMOID = 96;
const SINGLES = 12;

let view;
afterEach(() => view?.unmount());

const segs = (container) => [...container.querySelectorAll('[data-skyline="segment"]')];
const seg = (container, path, category) => segs(container)
  .find((e) => e.dataset.node === path && (!category || e.dataset.category === category));
const hover = (el) => el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: 100, clientY: 50 }));
const dblclick = (el) => el.dispatchEvent(new MouseEvent("dblclick", { bubbles: true, cancelable: true }));
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function op(path, name, forward, backward, activations, frames) {
  return {
    id: 0, name, path, kind: "op", forward_ms: forward, backward_ms: backward,
    activation_bytes: activations, peak_activation_bytes: activations, weight_bytes: 0,
    grad_bytes: 0, frames, children: [],
  };
}

/**
 * The small MLP report with a GRU-like module beside fc1: 49 addmm calls (times 0.10–0.196 ms
 * forward, 0.05 ms backward, 1–3 KiB saved), 96 sigmoid_ calls and 12 tiny ops called once,
 * all run from the model's first forward line.
 */
function gruReport() {
  const report = loadReport("small");
  const cell = report.sources[0];
  const line = cell.code.split("\n").findIndex((l) => l.includes("x = self.act(self.fc1(x))")) + 1;
  const frames = [{ file: cell.file, line, cell_id: cell.cell_id }];
  const children = [
    ...Array.from({ length: ADDMM }, (_, k) => op(`gru/addmm#${k}`, "addmm", 0.1 + 0.002 * k, 0.05, 1024 * (1 + (k % 3)), frames)),
    ...Array.from({ length: SIGMOID }, (_, k) => op(`gru/sigmoid_#${k}`, "sigmoid_", 0.01, null, 512, frames)),
    ...Array.from({ length: SINGLES }, (_, k) => op(`gru/tiny${k}#0`, `tiny${k}`, 0.0005, null, 0, frames)),
  ];
  const gru = {
    id: 0, name: "GRU", path: "gru", kind: "module", frames: [], children,
    forward_ms: sum(children.map((c) => c.forward_ms)),
    backward_ms: sum(children.map((c) => c.backward_ms ?? 0)),
    activation_bytes: sum(children.map((c) => c.activation_bytes)),
    peak_activation_bytes: sum(children.map((c) => c.peak_activation_bytes)),
    weight_bytes: 4096, grad_bytes: 4096,
  };
  for (const field of ["forward_ms", "backward_ms", ...FIELDS]) report.tree[field] += gru[field];
  report.tree.children.unshift(gru);
  return report;
}

const addmmCalls = (report) => report.tree.children[0].children.filter((c) => c.name === "addmm");

describe("grouping repeated calls", () => {
  test("49 addmm calls in one module are one segment with their summed time and memory", () => {
    const report = gruReport();
    const before = JSON.stringify(report);
    const index = indexTree(groupRepeatedOps(report.tree, FIELDS));
    expect(JSON.stringify(report)).toBe(before); // the report itself is untouched
    const gru = index.byPath.get("gru");
    const time = timeSegments(report, index, gru).segments;
    const addmm = time.filter((s) => s.name.startsWith("addmm"));
    expect(addmm.map((s) => [s.name, s.path, s.kind])).toEqual([["addmm \u00d7 49", "gru/addmm#*", "group"]]);
    expect(addmm[0].value).toBeCloseTo(sum(addmmCalls(report).map(nodeTime)), 9);
    const memory = memorySegments(report, index, gru).segments.find((s) => s.path === "gru/addmm#*");
    expect(memory.value).toBe(sum(addmmCalls(report).map((c) => c.activation_bytes)));
    expect(time.find((s) => s.path === "gru/sigmoid_#*").name).toBe("sigmoid_ \u00d7 96");
    // The group's node sums its calls; an op called once is not a group.
    const node = index.byPath.get("gru/addmm#*");
    expect(node.backward_ms).toBeCloseTo(ADDMM * 0.05, 9);
    expect(index.byPath.get("gru/sigmoid_#*").backward_ms).toBeNull();
    expect(index.byPath.get("gru/tiny0#0").kind).toBe("op");
  });

  test("a group drills open to its calls, each named by its call number", () => {
    const report = gruReport();
    const index = indexTree(groupRepeatedOps(report.tree, FIELDS));
    const calls = timeSegments(report, index, index.byPath.get("gru/addmm#*")).segments;
    expect(calls).toHaveLength(ADDMM);
    expect(calls.map((s) => s.name)).toContain("addmm #48");
    expect(calls.every((s) => s.kind === "op")).toBe(true);
  });

  test("many parts under 1 % of the bar are one 'other' segment; a few stay", () => {
    const report = gruReport();
    const index = indexTree(groupRepeatedOps(report.tree, FIELDS));
    const time = timeSegments(report, index, index.byPath.get("gru"));
    const other = time.segments.at(-1);
    expect(other).toMatchObject({ name: `other (${SINGLES} small)`, kind: "other", node: null, path: "gru/(other time)" });
    expect(other.parts.map((p) => p.path).sort()).toEqual(Array.from({ length: SINGLES }, (_, k) => `gru/tiny${k}#0`).sort());
    expect(other.value).toBeCloseTo(SINGLES * 0.0005, 12);
    expect(time.total).toBeCloseTo(nodeTime(report.tree.children[0]), 9);
    // The root of the small report has no more than a few small parts: all drawn.
    const root = timeSegments(report, index, index.root).segments;
    expect(root.some((s) => s.kind === "other")).toBe(false);
  });

  test("lines keep what each part of the level ran, grouped", () => {
    const report = gruReport();
    const index = indexTree(groupRepeatedOps(report.tree, FIELDS));
    const [stat] = [...lineStats(index.byPath.get("gru"), report.weights, false).values()];
    expect(stat.parts.get("gru/addmm#*")).toMatchObject({ label: "addmm \u00d7 49" });
    expect(stat.parts.get("gru/addmm#*").timeMs).toBeCloseTo(sum(addmmCalls(report).map(nodeTime)), 9);
  });
});

describe("grouped segments in the widget", () => {
  test("one hoverable group segment with mean and spread; double-click shows the 49 calls", () => {
    const report = gruReport();
    view = mount({ report });
    const { q } = view;
    dblclick(seg(q("breakdown-time"), "gru"));
    const group = seg(q("breakdown-time"), "gru/addmm#*");
    expect(segs(q("breakdown-time")).filter((e) => e.dataset.node.startsWith("gru/addmm"))).toEqual([group]);
    hover(group);
    const tip = q("tooltip");
    expect(tip.querySelector(".sk-tooltip-title").textContent).toBe("addmm \u00d7 49");
    const times = addmmCalls(report).map(nodeTime);
    expect(tip.textContent).toContain(`49 calls \u00b7 mean ${formatMs(sum(times) / ADDMM)} \u00b7 min ${formatMs(Math.min(...times))} \u2013 max ${formatMs(Math.max(...times))}`);
    expect(tip.textContent).toContain("double-click to see each call");
    // The memory tooltip spreads the calls' bytes of its category.
    hover(seg(q("breakdown-memory"), "gru/addmm#*", "activations"));
    const bytes = addmmCalls(report).map((c) => c.activation_bytes);
    expect(tip.textContent).toContain(`mean ${formatBytes(sum(bytes) / ADDMM)} \u00b7 min ${formatBytes(1024)} \u2013 max ${formatBytes(3072)}`);

    dblclick(group);
    expect(segs(q("breakdown-time"))).toHaveLength(ADDMM);
    expect(q("breadcrumb").textContent).toBe("MLP\u203agru\u203aaddmm \u00d7 49");
    q("back").click();
    expect(q("breadcrumb").textContent).toBe("MLP\u203agru");
    q("top").click();
    expect(q("breadcrumb").textContent).toBe("MLP");
  });

  test("the 'other' segment lists its parts and links them", () => {
    view = mount({ report: gruReport() });
    const { q } = view;
    dblclick(seg(q("breakdown-time"), "gru"));
    hover(seg(q("breakdown-time"), "gru/(other time)"));
    const tip = q("tooltip");
    expect(tip.querySelector(".sk-tooltip-title").textContent).toBe(`other (${SINGLES} small)`);
    expect(tip.querySelectorAll(".sk-tooltip-part")).toHaveLength(6);
    expect(tip.textContent).toContain(`and ${SINGLES - 6} more`);
    expect(tip.textContent).not.toContain("double-click");
    expect(q("code-view").querySelectorAll(".sk-highlight").length).toBeGreaterThan(0);
  });

  test("the code view's markers name the groups that ran a line", () => {
    view = mount({ report: gruReport() });
    dblclick(seg(view.q("breakdown-time"), "gru"));
    const [marker] = view.qa("line-marker");
    expect(marker.title).toMatch(/\nran: addmm \u00d7 49 [\d.]+ ms, sigmoid_ \u00d7 96 [\d.]+ \u00b5s, tiny\d+ [\d.]+ \u00b5s, 11 more$/);
  });
});

describe("untracked memory is drawn one way, measured or predicted", () => {
  const untracked = () => seg(view.q("breakdown-memory"), "untracked", "untracked");

  test("negative when measured: a chip; positive at a predicted batch: a segment, and back", () => {
    const report = loadReport("small");
    report.categories.find((c) => c.key === "untracked").bytes = -4096;
    view = mount({ report });
    expect(untracked().parentElement.classList.contains("sk-negatives")).toBe(true);
    key(view.q("throughput-bar"), "ArrowUp");
    expect(untracked().parentElement.classList.contains("sk-stack")).toBe(true);
    expect(untracked().dataset.negative).toBeUndefined();
    key(view.q("throughput-bar"), "ArrowDown");
    expect(untracked().parentElement.classList.contains("sk-negatives")).toBe(true);
    // named as the legend names the remainder, not as the untracked time
    expect(untracked().textContent).toBe(`other ${formatBytes(-4096)}`);
  });

  test("a view opened at a predicted batch draws it by its predicted sign", () => {
    const report = loadReport("small");
    report.categories.find((c) => c.key === "untracked").bytes = -4096;
    view = mount({ report, selected_batch_size: report.batch_size + 1 });
    expect(untracked().parentElement.classList.contains("sk-stack")).toBe(true);
  });
});
