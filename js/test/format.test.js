import { describe, expect, test } from "vitest";
import { formatBytes, formatFrame, formatInt, formatMs, formatPercent, formatThroughput } from "../src/format.js";

describe("formatMs", () => {
  test.each([
    [0, "0 ms"],
    [0.000512, "0.512 \u00b5s"],
    [0.85, "850 \u00b5s"],
    [1, "1 ms"],
    [1.234, "1.23 ms"],
    [12.345, "12.3 ms"],
    [123.45, "123 ms"],
    [999.6, "1000 ms"],
    [1234, "1.23 s"],
    [-0.24, "\u2212240 \u00b5s"],
    [-12.5, "\u221212.5 ms"],
  ])("%s ms -> %s", (ms, text) => expect(formatMs(ms)).toBe(text));

  test("missing values read as a dash, not NaN", () => {
    expect(formatMs(null)).toBe("\u2014");
    expect(formatMs(undefined)).toBe("\u2014");
    expect(formatMs(NaN)).toBe("\u2014");
  });
});

describe("formatBytes (IEC)", () => {
  test.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1024, "1 KiB"],
    [1536, "1.50 KiB"],
    [1048575, "1 MiB"], // 1023.999 KiB rounds up and is promoted to the next unit
    [3_840_000, "3.66 MiB"],
    [8 * 2 ** 30, "8 GiB"],
    [42949672960, "40 GiB"],
    [2 ** 50, "1 PiB"],
    [-256, "\u2212256 B"],
    [-5 * 2 ** 20, "\u22125 MiB"],
  ])("%s bytes -> %s", (bytes, text) => expect(formatBytes(bytes)).toBe(text));
});

describe("formatThroughput, formatPercent, formatInt", () => {
  test.each([
    [17391.304, "17,391 samples/s"],
    [467.6, "468 samples/s"],
    [98.76, "98.8 samples/s"],
    [1.234, "1.23 samples/s"],
    [Infinity, "\u221e samples/s"],
  ])("throughput %s -> %s", (v, text) => expect(formatThroughput(v)).toBe(text));

  test.each([
    [0, "0.0%"],
    [0.0004, "<0.1%"],
    [0.1234, "12.3%"],
    [0.99996, "99.9%"], // never claims 100% for a part that is not the whole
    [1, "100.0%"],
    [-0.05, "\u22125.0%"],
    [1.3, "130.0%"],
  ])("percent %s -> %s", (v, text) => expect(formatPercent(v)).toBe(text));

  test("thousands separators and rounding", () => {
    expect(formatInt(1234567)).toBe("1,234,567");
    expect(formatInt(999)).toBe("999");
    expect(formatInt(-1024)).toBe("\u22121,024");
  });

  test("frames name cells by a short id and files by path", () => {
    expect(formatFrame({ file: "/tmp/ipykernel_1/3.py", line: 7, cell_id: "5f0c2a9e-1d7b" })).toBe("cell 5f0c2a9e:7");
    expect(formatFrame({ file: "models/resnet.py", line: 12, cell_id: null })).toBe("models/resnet.py:12");
  });
});

test("cell code names without a cell id read as 'notebook cell'", async () => {
  const { formatSourceName, formatFrame } = await import("../src/format.js");
  expect(formatSourceName("/tmp/ipykernel_13591/2295780114.py", null)).toBe("notebook cell");
  expect(formatSourceName("<ipython-input-3-abc>", null)).toBe("notebook cell");
  expect(formatSourceName("models/net.py", null)).toBe("models/net.py");
  expect(formatFrame({ file: "/tmp/ipykernel_1/2.py", line: 4, cell_id: "abcdef123456" })).toBe("cell abcdef12:4");
});
