// Building DOM nodes. Every string becomes a text node: the only HTML
// the client ever inserts is the server's rendered message content
// (`setRendered`, and render.js parsing a list's worth at once).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "value") el.value = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

// Markup rendered by natter's Markdown processor, which escapes whatever
// the sender typed; the Content-Security-Policy runs no script in it.
export function setRendered(el, html) {
  el.innerHTML = html;
  linksApart(el);
}

// The links in rendered markup under `el` open in a new tab, without
// access to this one.
export function linksApart(el) {
  for (const a of el.querySelectorAll("a[href]")) {
    a.target = "_blank";
    a.rel = "noopener noreferrer";
  }
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}
