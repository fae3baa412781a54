// skyline_nb widget entry: anywidget's render({model, el}) for one view of a Report.
import { summaryLines } from "./summary.js";
import "./widget.css";

function render({ model, el }) {
  const controller = new AbortController();
  const root = document.createElement("div");
  root.className = "skyline-nb";
  root.dataset.skyline = "root";
  el.appendChild(root);

  const draw = () => {
    root.replaceChildren();
    const status = model.get("status");
    const error = model.get("error");
    if (status) root.appendChild(line("status", status));
    if (error) root.appendChild(line("error", error));
    for (const text of summaryLines(model.get("report"))) root.appendChild(line("summary", text));
  };
  model.on("change:report", draw);
  model.on("change:status", draw);
  model.on("change:error", draw);
  draw();
  return () => {
    controller.abort();
    root.remove();
  };
}

function line(kind, text) {
  const div = document.createElement("div");
  div.dataset.skyline = kind;
  div.textContent = text;
  return div;
}

export default { render };
