import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { formatBytes, formatFrame, formatInt, formatMs, formatPercent, formatThroughput } from "../src/format.js";
import { fixturePath } from "./helpers.js";

// Python's skyline_nb/export/units.py must print the same: tests/fixtures/format_cases.json
// holds the cases both test suites check (tests/unit/test_format.py).
const CASES = JSON.parse(readFileSync(fixturePath("format_cases.json"), "utf8"));
const FORMATTERS = { ms: formatMs, bytes: formatBytes, throughput: formatThroughput };
// JSON cannot hold non-finite numbers; the fixture writes them as strings.
const SPECIAL = { NaN, Infinity, "-Infinity": -Infinity };
const decode = (v) => (typeof v === "string" ? SPECIAL[v] : v);

describe("formatMs, formatBytes and formatThroughput agree with Python (format_cases.json)", () => {
  test("the fixture names exactly these formatters", () => {
    expect(Object.keys(CASES).filter((k) => k !== "about").sort()).toEqual(Object.keys(FORMATTERS).sort());
  });
  for (const [kind, format] of Object.entries(FORMATTERS)) {
    test.each(CASES[kind])(`${kind}: %s -> %s`, (value, text) => expect(format(decode(value))).toBe(text));
  }

  test("undefined reads as a dash, as null does", () => {
    expect(formatMs(undefined)).toBe("\u2014");
  });
});

describe("formatPercent, formatInt", () => {
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
