// Tiny element builder. Text always goes through textContent: module names, file names and
// source code come from the user's program and must never be parsed as HTML.

/**
 * h("div", {class: "x", text: "hi", data: {skyline: "status"}, attrs: {role: "alert"}}, children)
 */
export function h(tag, props = {}, children = []) {
  const el = document.createElement(tag);
  const { class: className, text, data, attrs, style, title } = props;
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = String(text);
  if (title) el.title = title;
  if (data) for (const [k, v] of Object.entries(data)) if (v !== undefined && v !== null) el.dataset[k] = String(v);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (style) for (const [k, v] of Object.entries(style)) el.style.setProperty(k, v);
  for (const child of children) if (child) el.append(child);
  return el;
}

/** Replace an element's text (and nothing else). */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * Give the keys `handle` takes to the element `owner` while focus is inside it. Notebook hosts
 * bind plain keys (arrows, Enter, Page Up/Down) to notebook commands: JupyterLab runs them when
 * the key bubbles up to the document, Notebook 7 while it is captured there, before the focused
 * element sees it. So the listener sits on the window in the capture phase, the first stop of
 * every key event: `handle(event)` runs there and, when it returns true, the event goes no
 * further (the handler calls preventDefault itself where the key's default action must not
 * happen). Keys pressed with Ctrl, Alt, Meta or Shift are never taken: the page's shortcuts
 * (save, run, extend the selection) keep working while a part of the widget has focus.
 */
export function ownKeys(owner, handle, signal) {
  const view = owner.ownerDocument.defaultView;
  view.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.altKey || e.metaKey || e.shiftKey) return;
    const target = e.composedPath()[0];
    if (!(target instanceof view.Element) || !owner.contains(target)) return;
    if (handle(e, target)) e.stopPropagation();
  }, { capture: true, signal });
}

/**
 * Hand focus back to the page: to the nearest focusable element around `el` (in a notebook,
 * the cell holding the output, so the notebook's own keys work again), else nowhere.
 */
export function releaseFocus(el) {
  const host = el.parentElement?.closest("[tabindex]");
  el.blur();
  host?.focus({ preventScroll: true });
}
