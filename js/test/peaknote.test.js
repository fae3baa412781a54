import { afterEach, describe, expect, test } from "vitest";
import { formatBytes } from "../src/format.js";
import { peakPlaceText } from "../src/peaknote.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

describe("where the memory peak happened", () => {
  test("in words, for each phase", () => {
    expect(peakPlaceText({ phase: "backward", module: "layer3.1.conv2", op: "convolution" }))
      .toBe("in backward of layer3.1.conv2 (convolution)");
    expect(peakPlaceText({ phase: "backward", module: "", op: "_log_softmax" }))
      .toBe("in backward of code outside the model's modules (_log_softmax)");
    expect(peakPlaceText({ phase: "optimizer", module: "[optimizer]", op: null })).toBe("in the optimizer step");
    expect(peakPlaceText(null)).toBe("");
  });

  test("the widget shows it under the memory breakdown, as text", () => {
    const report = loadReport("small");
    report.peak_place = { phase: "backward", module: "fc1<img src=x>", op: "addmm" };
    view = mount({ report });
    const note = view.q("peak-note");
    expect(note.hidden).toBe(false);
    expect(note.textContent).toMatch(/^Peak .* in backward of fc1<img src=x> \(addmm\)$/);
    expect(note.querySelector("img")).toBeNull();
  });

  test("reports that do not say show no line", () => {
    const report = loadReport("small");
    delete report.peak_place;
    view = mount({ report });
    expect(view.q("peak-note").hidden).toBe(true);
  });
});

test("a module's memory tooltip says how much its forward and backward add at most", () => {
  const report = loadReport("small");
  const fc1 = report.tree.children.find((c) => c.path === "fc1");
  Object.assign(fc1, { forward_peak_bytes: 2048, backward_peak_bytes: 4096 });
  view = mount({ report });
  const seg = view.q("breakdown-memory").querySelector('[data-skyline="segment"][data-node="fc1"]');
  seg.dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: 5, clientY: 5 }));
  expect(view.q("tooltip").textContent).toContain("adds at most 2 KiB in forward \u00b7 4 KiB in backward");
  expect(view.q("tooltip").textContent).toContain(`saves ${formatBytes(fc1.activation_bytes)} for backward`);
});
