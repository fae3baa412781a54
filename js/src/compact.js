// The report trait arrives as one compact string ("deflate;base64," + base64 of the deflated
// JSON: skyline_nb/widget/__init__.py report_to_wire) or, from the offline page and older
// notebooks, as the report object itself. Inflating is asynchronous (DecompressionStream).

export const COMPACT_PREFIX = "deflate;base64,";

/** Whether `value` is a compact report that `inflateReport` must turn into an object. */
export const isCompact = (value) => typeof value === "string" && value.startsWith(COMPACT_PREFIX);

/** The report object from a compact string; rejects when it cannot be read. */
export async function inflateReport(value) {
  const binary = atob(value.slice(COMPACT_PREFIX.length));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const source = new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
  return JSON.parse(await new Response(source.pipeThrough(new DecompressionStream("deflate"))).text());
}
