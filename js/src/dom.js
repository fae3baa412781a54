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
