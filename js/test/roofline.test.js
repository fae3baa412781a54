import { afterEach, describe, expect, test } from "vitest";
import { formatSi } from "../src/format.js";
import { attainable, FLOP_FIELDS, flopStats, flopsText, nameSpot, plotFrame, roofSegments } from "../src/roofline.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

// The small report's device (tests/fixtures/make_reports.py): 216 GFLOP/s, 52 GB/s, so the
// ridge lies at 216 / 52 = 4.15 FLOP/byte.
const ROOF = { peak: 216e9, bandwidth: 52e9 };
// fc1 (784 -> 512, batch 32): 77,070,336 FLOPs moving 5,314,560 bytes (14.5 FLOP/B) in
// 1.23 ms: 62.7 GFLOP/s, under the compute roof: 29.0 % of 216 GFLOP/s.
const FC1 = "FLOPs 77.1 M \u00b7 62.7 GFLOP/s \u00b7 29.0% of attainable";

const seg = (view, bar, path) => view.q(`breakdown-${bar}`).querySelector(`[data-skyline="segment"][data-node="${path}"]`);
const point = (view, path) => view.q("roofline").querySelector(`[data-skyline="roof-point"][data-node="${path}"]`);
const mouse = (type, el) => el.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: 120, clientY: 80 }));
const linked = (view) => [...view.el.querySelectorAll(".sk-linked")].map((e) => `${e.closest("[data-skyline^=breakdown]").dataset.skyline}:${e.dataset.node}`);
const litPoints = (view) => [...view.q("roofline").querySelectorAll(".sk-roof-linked")].map((e) => e.dataset.node);
const tipLines = (view) => [...view.q("tooltip").children].map((l) => l.textContent);
const num = (el, name) => Number(el.getAttribute(name));

describe("formatSi", () => {
  test.each([
    [0, "", "0"], [850, "", "850"], [1234, "", "1.23 k"], [77070336, "", "77.1 M"],
    [999.6e3, "", "1 M"], [4.56e10, "FLOP/s", "45.6 GFLOP/s"], [52e9, "B/s", "52 GB/s"],
    [0.25, "FLOP/B", "0.25 FLOP/B"], [-2e6, "", "\u22122 M"], [Number.NaN, "", "\u2014"],
  ])("%s %s -> %s", (value, unit, text) => expect(formatSi(value, unit)).toBe(text));
});

describe("FLOPs, achieved rate and share of the roof", () => {
  const node = (fields) => ({ forward_ms: 10, backward_ms: 20, forward_flops: 1e9, backward_flops: 2e9, flop_bytes_moved: 1e8, ...fields });

  test("compute-bound: 3 GFLOP in 30 ms at 30 FLOP/B is 100 GFLOP/s of 216", () => {
    expect(flopStats(node(), ROOF)).toEqual({ flops: 3e9, rate: 1e11, intensity: 30, share: 1e11 / 216e9 });
    expect(flopsText(node(), ROOF)).toBe("FLOPs 3 G \u00b7 100 GFLOP/s \u00b7 46.3% of attainable");
  });

  test("memory-bound: at 2 FLOP/B the roof is 2 x 52 GB/s = 104 GFLOP/s", () => {
    expect(attainable(ROOF, 2)).toBe(104e9);
    expect(flopsText(node({ flop_bytes_moved: 1.5e9 }), ROOF)).toBe("FLOPs 3 G \u00b7 100 GFLOP/s \u00b7 96.2% of attainable");
  });

  test("without bytes moved only the compute roof bounds it; without a roof, no share", () => {
    expect(attainable(ROOF, null)).toBe(216e9);
    expect(flopsText(node({ flop_bytes_moved: 0 }), ROOF)).toContain("46.3% of attainable");
    expect(flopsText(node(), null)).toBe("FLOPs 3 G \u00b7 100 GFLOP/s");
    expect(flopsText(node({ forward_ms: 0, backward_ms: null }), ROOF)).toBe("FLOPs 3 G");
    expect(flopsText(node({ forward_flops: 0, backward_flops: 0 }), ROOF)).toBe(null);
  });
});

describe("the time tooltip", () => {
  test("shows a node's FLOPs, FLOP/s and share of the roof; a memory segment's does not", () => {
    view = mount({ report: loadReport("small") });
    mouse("mouseover", seg(view, "time", "fc1"));
    expect(tipLines(view)).toContain(FC1);
    mouse("mouseover", seg(view, "time", "act"));
    expect(tipLines(view).some((l) => l.startsWith("FLOPs"))).toBe(false);
    mouse("mouseover", seg(view, "memory", "fc1"));
    expect(tipLines(view).some((l) => l.startsWith("FLOPs"))).toBe(false);
  });

  test("at a predicted batch size it keeps the measured values and says so", () => {
    view = mount({ report: loadReport("small"), selected_batch_size: 128 });
    mouse("mouseover", seg(view, "time", "fc1"));
    expect(tipLines(view)).toContain(`${FC1} (measured batch)`);
    expect(tipLines(view)).toContain("predicted at batch size 128");
    expect(view.q("roofline").textContent).toContain("measured at batch size 32");
  });

  test("a report without the device's peaks: FLOPs and FLOP/s, no share, no plot", () => {
    const report = loadReport("small");
    report.device.peak_flops = 0;
    report.device.bandwidth = 0;
    view = mount({ report });
    expect(view.q("roofline")).toBe(null);
    mouse("mouseover", seg(view, "time", "fc1"));
    expect(tipLines(view)).toContain("FLOPs 77.1 M \u00b7 62.7 GFLOP/s");
  });

  test("a report without FLOPs (older reports) has neither the line nor the plot", () => {
    const report = loadReport("small");
    const strip = (node) => {
      for (const field of FLOP_FIELDS) delete node[field];
      node.children.forEach(strip);
    };
    strip(report.tree);
    view = mount({ report });
    expect(view.q("roofline")).toBe(null);
    mouse("mouseover", seg(view, "time", "fc1"));
    expect(tipLines(view).some((l) => l.startsWith("FLOPs"))).toBe(false);
  });
});

describe("the roofline plot", () => {
  test("frames whole decades around the ridge and the points; roofs meet at the ridge", () => {
    const stats = [{ intensity: 14.5, rate: 62.7e9 }, { intensity: 3.75, rate: 12.3e9 }];
    const frame = plotFrame(ROOF, stats);
    expect(frame.xDecades).toEqual([0, 2]);
    expect(frame.yDecades).toEqual([10, 12]);
    const { memory, compute } = roofSegments(ROOF, frame);
    expect(memory).toEqual([[1, 52e9], [216 / 52, 216e9]]);
    expect(compute).toEqual([[216 / 52, 216e9], [100, 216e9]]);
  });

  test("a point's name goes above it, below it where it would cover the peak roof's label", () => {
    const frame = plotFrame(ROOF, [{ intensity: 14.5, rate: 62.7e9 }]);
    const roofY = frame.y(ROOF.peak); // 55.3: the label "216 GFLOP/s" ends at x 288, baseline 51.3
    // fc1 of the small report, well under the roof: above, to the right.
    expect(nameSpot(191.05, 91.81, "fc1", ROOF, frame)).toEqual({ x: 197.05, y: 86.81, anchor: "start" });
    // A point on the flat roof under its label (seen: "blocks" across "216 GFLOP/s"): below it.
    expect(nameSpot(200, roofY, "blocks", ROOF, frame)).toEqual({ x: 206, y: roofY + 14, anchor: "start" });
    // On the roof but left of the label's box: above.
    expect(nameSpot(140, roofY, "fc", ROOF, frame).y).toBeCloseTo(roofY - 5, 6);
  });

  test("points within a few pixels get their names where no name is yet, or none", () => {
    // A WGAN-GP's d, g and the double backward's MmBackward0 sat within 4 px, their names
    // printed over each other (session 33).
    const frame = plotFrame(ROOF, [{ intensity: 14.5, rate: 62.7e9 }]);
    const taken = [];
    const box = ({ x, y, anchor }, name) => {
      const width = 6 * name.length; // roofline.js CHAR_W
      const x0 = anchor === "end" ? x - width : x;
      return { x0, x1: x0 + width, y0: y - 10, y1: y + 2 };
    };
    const spots = ["d", "g", "MmBackward0", "fc", "fc2"].map((name, i) => {
      const spot = nameSpot(150 + i, 100 + i, name, ROOF, frame, taken);
      if (spot) taken.push(box(spot, name));
      return spot && [spot.anchor, spot.y < 100 + i ? "above" : "below"];
    });
    expect(spots).toEqual([["start", "above"], ["start", "below"], ["end", "above"], ["end", "below"], null]);
    const overlap = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
    for (const [i, a] of taken.entries()) for (const b of taken.slice(i + 1)) expect(overlap(a, b)).toBe(false);
  });

  test("draws the two roofs and one point per module with FLOPs, where the numbers put them", () => {
    view = mount({ report: loadReport("small") });
    const plot = view.q("roofline");
    // x: 54 + 118 px a decade from 1 FLOP/B; y: 146 - 68 px a decade from 10 GFLOP/s.
    const memory = plot.querySelector('line[data-roof="memory"]');
    const compute = plot.querySelector('line[data-roof="compute"]');
    expect(num(memory, "x1")).toBeCloseTo(54, 1);
    expect(num(memory, "y1")).toBeCloseTo(97.31, 1); // 52 GB/s x 1 FLOP/B
    expect(num(memory, "x2")).toBeCloseTo(126.98, 1); // the ridge, 4.15 FLOP/B
    expect(num(memory, "y2")).toBeCloseTo(55.26, 1); // 216 GFLOP/s
    expect([num(compute, "x1"), num(compute, "y1"), num(compute, "x2"), num(compute, "y2")].map((v) => v.toFixed(1)))
      .toEqual(["127.0", "55.3", "290.0", "55.3"]);
    const points = [...plot.querySelectorAll('[data-skyline="roof-point"]')];
    expect(points.map((p) => p.dataset.node)).toEqual(["fc1", "fc2"]); // act, the loss: no FLOPs
    expect(num(point(view, "fc1"), "cx")).toBeCloseTo(191.05, 1); // 14.5 FLOP/B
    expect(num(point(view, "fc1"), "cy")).toBeCloseTo(91.81, 1); // 62.7 GFLOP/s
    expect(num(point(view, "fc2"), "cx")).toBeCloseTo(121.79, 1); // 3.75 FLOP/B
    expect(num(point(view, "fc2"), "cy")).toBeCloseTo(139.92, 1); // 12.3 GFLOP/s
    expect([...plot.querySelectorAll(".sk-roof-label")].map((t) => t.textContent)).toEqual(["216 GFLOP/s", "52 GB/s"]);
    // A point takes its segment's colour.
    expect(point(view, "fc1").getAttribute("class")).toBe(`sk-roof-point ${[...seg(view, "time", "fc1").classList].find((c) => /^sk-c\d$/.test(c))}`);
  });

  test("hovering a point shows the tooltip and highlights its segments in both breakdowns", () => {
    view = mount({ report: loadReport("small") });
    mouse("mouseover", point(view, "fc1"));
    expect(view.q("tooltip").hidden).toBe(false);
    expect(tipLines(view)[0]).toBe("fc1 (Linear)");
    expect(tipLines(view)).toContain(FC1);
    expect(linked(view).sort()).toEqual(["breakdown-memory:fc1", "breakdown-memory:fc1", "breakdown-memory:fc1", "breakdown-time:fc1"].sort());
    expect(litPoints(view)).toEqual(["fc1"]);
    mouse("mouseleave", view.q("roofline").querySelector("svg"));
    expect(view.q("tooltip").hidden).toBe(true);
    expect(linked(view)).toEqual([]);
    expect(litPoints(view)).toEqual([]);
  });

  test("hovering a segment highlights its point", () => {
    view = mount({ report: loadReport("small") });
    mouse("mouseover", seg(view, "time", "fc2"));
    expect(litPoints(view)).toEqual(["fc2"]);
    expect(view.q("roofline").querySelector("svg").classList.contains("sk-roof-highlight")).toBe(true);
    mouse("mouseover", seg(view, "memory", "fc1"));
    expect(litPoints(view)).toEqual(["fc1"]);
    mouse("mouseleave", view.q("breakdown-memory"));
    expect(litPoints(view)).toEqual([]);
  });

  test("follows the drill: a double-click on a point opens the module, whose ops are the points", () => {
    view = mount({ report: loadReport("small") });
    point(view, "fc1").dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    expect(view.q("breadcrumb").textContent).toContain("fc1");
    const points = [...view.q("roofline").querySelectorAll('[data-skyline="roof-point"]')];
    expect(points.map((p) => p.dataset.node)).toEqual(["fc1/addmm#0"]);
    expect(num(points[0], "cx")).toBeCloseTo(191.05, 1); // the frame stays: the op is the module
    view.q("top").click();
    expect(view.q("roofline").querySelectorAll('[data-skyline="roof-point"]')).toHaveLength(2);
  });

  test("repeated calls of an op are one point with their FLOPs summed", () => {
    const report = loadReport("small");
    const fc1 = report.tree.children.find((c) => c.path === "fc1");
    fc1.children.push({ ...fc1.children[0], id: 99, path: "fc1/addmm#1" });
    view = mount({ report });
    point(view, "fc1").dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    const group = point(view, "fc1/addmm#*");
    expect(group).not.toBe(null);
    mouse("mouseover", group);
    // Twice the FLOPs in twice the time moving twice the bytes: the same rate and share.
    expect(tipLines(view)).toContain("FLOPs 154 M \u00b7 62.7 GFLOP/s \u00b7 29.0% of attainable");
  });

  test("small parts merged into 'other' are points in its colour, linked to the 'other' segment", () => {
    const report = loadReport("small");
    const tiny = Array.from({ length: 9 }, (_, i) => ({
      id: 200 + i, name: `mm${i}`, path: `/mm${i}#0`, kind: "op", forward_ms: 0.001, backward_ms: null,
      activation_bytes: 0, weight_bytes: 0, grad_bytes: 0, frames: [], children: [],
      forward_flops: 1e6 * (i + 1), backward_flops: 0, flop_bytes_moved: 1e5,
    }));
    report.tree.children.splice(3, 0, ...tiny);
    view = mount({ report });
    const part = point(view, "/mm0#0");
    expect(part.dataset.kind).toBe("other");
    mouse("mouseover", part);
    expect(tipLines(view)[0]).toBe("mm0");
    expect(linked(view)).toContain("breakdown-time:(other time)");
  });
});

test("a part with much of the time but no FLOPs counted is named under the plot", () => {
  const report = loadReport("small");
  view = mount({ report });
  const missing = () => view.q("roof-missing");
  expect(missing().hidden).toBe(true); // the optimizer's 6.5 % and untracked time: not named
  view.unmount();
  const stripped = loadReport("small");
  const fc1 = stripped.tree.children.find((c) => c.path === "fc1");
  for (const n of [fc1, ...(fc1.children || [])]) for (const field of FLOP_FIELDS) n[field] = 0;
  view = mount({ report: stripped });
  expect(point(view, "fc1")).toBeNull();
  expect(missing().hidden).toBe(false);
  expect(missing().textContent).toMatch(/^not plotted, no FLOPs counted for their ops: fc1 \(\d\d\.\d% of the time\)$/);
  view.q("breakdown-time").querySelector('[data-node="optimizer"]').dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
  expect(view.q("roofline").querySelector(".sk-empty").hidden).toBe(false); // no point: said once
  expect(missing().hidden).toBe(true);
});
