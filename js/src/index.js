// skyline_nb widget entry: anywidget's render({model, el}) for one view of a Report.
// Renders ONLY from the synced traits (report, status, progress, error), so a saved notebook or
// the offline page shows the same widget without a kernel; predictions come from the report's
// model coefficients (predict.js). A live widget follows its kernel (kernel.js): the host's word
// on the kernel's status, and a ping whenever the kernel is not working for this widget.

import { reportArrived } from "./actions.js";
import { inflateReport, isCompact } from "./compact.js";
import { h } from "./dom.js";
import { createError, renderEmpty, renderHeader, renderWarnings } from "./header.js";
import { checkKernel, connectKernel, isLive, watchHost } from "./kernel.js";
import { createProgress } from "./progress.js";
import { createReportView } from "./reportview.js";
import { createTooltip } from "./tooltip.js";
import "./widget.css";

const ATTACH_POLL_MS = 250;

function hasReport(report) {
  return Boolean(report && typeof report === "object" && report.tree && report.batch_size !== undefined);
}

/**
 * Call `then()` once `el` is in the page: the notebook holding it answers its events, and a host
 * may render a view before attaching it (JupyterLab does, when an output is replaced).
 */
function whenInPage(el, signal, then) {
  if (el.isConnected) return then();
  const timer = setInterval(() => {
    if (!el.isConnected) return;
    clearInterval(timer);
    then();
  }, ATTACH_POLL_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
}

/** Build one view; returns its cleanup. Several views of one model may exist at once. */
export function createView({ model, el }) {
  const viewController = new AbortController(); // listeners and pings of this view
  const root = h("div", { class: "skyline-nb", data: { skyline: "root" } });
  const progress = createProgress({ model, el, signal: viewController.signal });
  const error = createError();
  const header = h("div", { class: "sk-header-slot" });
  const body = h("div", { class: "sk-body" });
  root.append(header, progress.el, error.el, body);
  const tooltip = createTooltip(root);
  el.append(root);
  const live = isLive(model);

  let reportController = null; // one AbortController for every listener of the current report
  let view = null;
  let renderProblem = "";
  let wanted = 0; // the newest report value asked for: a slower inflate of an older one loses

  function drawReport() {
    const value = model.get("report");
    const token = ++wanted;
    if (!isCompact(value)) return draw(value);
    inflateReport(value).then(
      (report) => token === wanted && draw(report),
      (err) => {
        if (token !== wanted) return;
        renderProblem = `Cannot read this report: ${err?.message || err}`;
        onError();
      },
    );
  }

  function draw(report) {
    // Listeners and timers of the previous report die with its controller.
    reportController?.abort();
    reportController = new AbortController();
    const drillPath = view?.drillPath ?? null;
    view = null;
    renderProblem = "";
    onError();
    tooltip.hide();
    if (!hasReport(report)) {
      header.replaceChildren();
      body.replaceChildren(renderEmpty());
      return;
    }
    header.replaceChildren(...[renderHeader(report), renderWarnings(report)].filter(Boolean));
    try {
      view = createReportView({
        report,
        model,
        el,
        tooltip,
        signal: reportController.signal,
        drillPath,
        // A view starts at the batch size dragged to: a new view of a dragged model, and the
        // report a measurement there joined; a re-profile clears it (live.py), so its report
        // starts at its own measured batch size.
        initialBatch: model.get("selected_batch_size") ?? undefined,
      });
      body.replaceChildren(view.el);
    } catch (err) {
      // A malformed report must not leave an empty output: say what broke.
      body.replaceChildren();
      renderProblem = `Cannot display this report: ${err?.message || err}`;
      onError();
    }
  }

  const onReport = () => {
    reportArrived(model); // before the new report's view reads the measurement
    drawReport();
  };
  // While the kernel works for this widget it may not answer (it reads widget messages between
  // cells unless they come over a subshell); once it is done, ask.
  const checkIdle = () => {
    if (live && !model.get("status")) checkKernel(model, viewController.signal);
  };
  const onStatus = () => {
    progress.update();
    checkIdle();
  };
  const onError = () => error.set([model.get("error"), renderProblem].filter(Boolean).join("\n\n"));
  const onSelected = () => view?.follow(model.get("selected_batch_size"));
  const onMeasurement = () => view?.measured();
  const listeners = [
    ["change:report", onReport], ["change:status", onStatus], ["change:progress", progress.update], ["change:error", onError],
    ["change:selected_batch_size", onSelected], ["change:measurement", onMeasurement],
  ];
  for (const [name, cb] of listeners) model.on(name, cb);

  drawReport();
  if (live) {
    whenInPage(el, viewController.signal, () => {
      watchHost(model, el, viewController.signal);
      checkIdle();
    });
  }

  return () => {
    reportController?.abort();
    viewController.abort();
    // anywidget already drops a view's model.on listeners when the view goes; off() also
    // covers hosts (the standalone page) that do not.
    if (typeof model.off === "function") for (const [name, cb] of listeners) model.off(name, cb);
    root.remove();
  };
}

/** anywidget's entry; `experimental.invoke` is how this view asks its kernel object. */
function render({ model, el, experimental }) {
  connectKernel(model, experimental?.invoke);
  return createView({ model, el });
}

export default { render };
