import { afterEach, describe, expect, test } from "vitest";
import { formatBytes } from "../src/format.js";
import { createPeakNote, measuredPeakText, peakPhase, peakPlaceText, placePhase } from "../src/peaknote.js";
import { Predictor } from "../src/predict.js";
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

  test("while a drag predicts, the phase predicted to hold the peak there, when the lines say", () => {
    const report = { peak_bytes: 1024, peak_place: { phase: "backward", module: "encoder", op: "mm" } };
    const phasesAt = (batch) => (batch > 16 ? ["loss"] : ["backward"]);
    const note = createPeakNote({ report, predictor: { peakPhasesAt: phasesAt } });
    note.update({ predicted: true, peakBytes: 4 * 2 ** 20, batch: 64 });
    expect(note.el.textContent).toBe(
      "Predicted peak 4 MiB at batch size 64, in the loss and its backward; measured peak in backward of encoder (mm)");
    note.update({ predicted: true, peakBytes: 2 ** 20, batch: 12 });
    expect(note.el.textContent).toContain("at batch size 12, in the model's backward;");
    const unknown = createPeakNote({ report, predictor: { peakPhasesAt: () => ["<b>warmup</b>"] } });
    unknown.update({ predicted: true, peakBytes: 2 ** 20, batch: 64 });
    expect(unknown.el.textContent).toContain(", in <b>warmup</b>;");
    expect(unknown.el.querySelector("b")).toBeNull();
    for (const predictor of [{ peakPhasesAt: () => [] }, { peakPhasesAt: () => { throw new Error("no memory model"); } }, undefined]) {
      const plain = createPeakNote({ report, predictor });
      plain.update({ predicted: true, peakBytes: 2 ** 20, batch: 64 });
      expect(plain.el.textContent).toBe("Predicted peak 1 MiB at batch size 64; measured peak in backward of encoder (mm)");
    }
  });

  test("phases whose predicted peaks lie within 1% of each other are named together", () => {
    // a BERT's forward and backward peaks grew 313,096 and 312,852 B a sample: the forward's
    // line crossed above at 512 by 0.03 %, while every sample peaked in backward
    const report = { peak_bytes: 1024, peak_place: { phase: "backward", module: "bert", op: "addmm" } };
    const predictor = new Predictor({
      ...loadReport("small").models,
      memory: { shape: "line", lines: [
        { slope: 312_852, intercept: 1_200_000, phase: "backward" },
        { slope: 313_096, intercept: 1_080_000, phase: "forward" },
      ] },
    });
    expect(predictor.peakPhaseAt(512)).toBe("forward");
    expect(predictor.peakPhasesAt(512)).toEqual(["forward", "backward"]);
    expect(predictor.peakPhasesAt(16)).toEqual(["backward"]); // 1.9 % above the forward's there
    expect(predictor.peakPhasesAt(512, 1e-5)).toEqual(["forward"]); // 0.003 % apart
    const note = createPeakNote({ report, predictor });
    note.update({ predicted: true, peakBytes: 161_500_000, batch: 512 });
    expect(note.el.textContent).toBe("Predicted peak 154 MiB at batch size 512, in the model's forward or "
      + "the model's backward (their peaks within 1% of each other); measured peak in backward of bert (addmm)");
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

describe("the measured peak's place when a kernel's workspace moves the allocator's peak", () => {
  const lstm = (byPhase) => ({
    batch_size: 8,
    peak_bytes: 16_000_000,
    peak_place: { phase: "backward", module: "", op: "_log_softmax" },
    samples: [{ batch_size: 4, peak_by_phase: { backward: 9 } }, { batch_size: 8, peak_by_phase: byPhase }],
  });

  test("the allocator's phase is named, and where the tensors alone peaked", () => {
    const report = lstm({ forward: 10, loss: 14, backward: 16, optimizer: 3 });
    expect(measuredPeakText(report)).toBe(
      "in the model's backward (kernel workspaces included; the tensors alone peak in backward of code outside the model's modules (_log_softmax))");
    const note = createPeakNote({ report, predictor: { peakPhasesAt: () => ["loss"] } });
    note.update();
    expect(note.el.textContent).toMatch(/^Peak 15\.3 MiB, in the model's backward \(kernel workspaces included; /);
    note.update({ predicted: true, peakBytes: 2 ** 25, batch: 32 });
    expect(note.el.textContent).toMatch(/in the loss and its backward; measured peak in the model's backward \(/);
  });

  test("when both agree, or a side cannot say, the place alone", () => {
    expect(measuredPeakText(lstm({ forward: 10, loss: 16, backward: 14 })))
      .toBe("in backward of code outside the model's modules (_log_softmax)");
    expect(measuredPeakText({ ...lstm({}), samples: [] })).toBe("in backward of code outside the model's modules (_log_softmax)");
    const forwardOutside = { ...lstm({ forward: 1, backward: 2 }), peak_place: { phase: "forward", module: "", op: "embedding" } };
    expect(measuredPeakText(forwardOutside)).toBe("in forward of code outside the model's modules (embedding)");
    expect(placePhase({ phase: "backward", module: "lstm", op: "x" })).toBe("backward");
    expect(placePhase({ phase: "forward", module: "[optimizer]", op: null })).toBe("optimizer");
    expect(peakPhase({ forward: "3", backward: 5, bad: "x" })).toBe("backward");
    expect(peakPhase({ forward: null, loss: true, backward: -1 })).toBe("backward"); // not 0 or 1
    expect(measuredPeakText({})).toBe("");
  });
});
