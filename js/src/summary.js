// Plain-text summary of a Report dict (the widget's fallback view and the headline numbers).

export function summaryLines(report) {
  if (!report || typeof report !== "object" || report.batch_size === undefined) {
    return ["No profile yet."];
  }
  const device = report.device || {};
  return [
    `Device: ${device.name || device.kind || "unknown"}`,
    `Batch size: ${report.batch_size}`,
    `Iteration: ${Number(report.iteration_ms).toFixed(2)} ms`,
    `Throughput: ${Number(report.throughput).toFixed(1)} samples/s`,
    `Peak memory: ${report.peak_bytes} bytes`,
  ];
}
