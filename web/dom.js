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
  finishRendered(el);
}

// What the page adds to rendered markup under `el`: links open in a new
// tab without access to this one; emoji show as their characters (the
// markup names the code points in a class, `emoji-1f642`); a spoiler's
// header is a button that shows and hides its content (hidden at first,
// `toggleSpoiler`).
export function finishRendered(el) {
  for (const a of el.querySelectorAll("a[href]")) {
    a.target = "_blank";
    a.rel = "noopener noreferrer";
  }
  for (const e of el.querySelectorAll("span.emoji")) {
    const code = /(?:^|\s)emoji-([0-9a-f]+(?:-[0-9a-f]+)*)(?:\s|$)/.exec(e.className)?.[1];
    const char = code && emojiChar(code);
    if (char) e.textContent = char;
  }
  for (const header of el.querySelectorAll(".spoiler-header")) {
    header.setAttribute("role", "button");
    header.setAttribute("tabindex", "0");
    header.setAttribute("aria-expanded", "false");
  }
}

export function toggleSpoiler(header) {
  const spoiler = header.closest(".spoiler-block");
  const open = spoiler.classList.toggle("spoiler-open");
  header.setAttribute("aria-expanded", String(open));
  spoiler.querySelector(":scope > .spoiler-content")?.setAttribute("aria-hidden", String(!open));
}

// The character of an emoji code (`1f1e9-1f1ea`), or null.
export function emojiChar(code) {
  try {
    return String.fromCodePoint(...code.split("-").map((x) => parseInt(x, 16)));
  } catch {
    return null;
  }
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}
