// The message list and its entries. Each entry is a clone of a skeleton
// built once, filled in place: no listener of its own (the list has one
// for all its buttons), no layout read, timestamps from formatters made
// once. The server's rendered HTML is the only markup inserted.

import { h, setRendered, finishRendered, emojiChar } from "./dom.js";
import { toHash } from "./narrow.js";

const TIME = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });
const FULL = new Intl.DateTimeFormat([], {
  year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric",
});

// An entry, by the actions it offers: [edit][delete], each true or false.
const skeletons = new Map();

function actionsBox(edit, del) {
  return h("div", { class: "actions" },
    h("button", { type: "button", class: "react", "aria-label": "Add reaction", dataset: { action: "react" } }, "☺+"),
    edit ? h("button", { type: "button", class: "edit", dataset: { action: "edit" } }, "Edit") : null,
    del ? h("button", { type: "button", class: "delete", dataset: { action: "delete" } }, "Delete") : null);
}

function skeleton(edit, del) {
  const key = (edit ? 2 : 0) + (del ? 1 : 0);
  let li = skeletons.get(key);
  if (!li) {
    li = h("li", { class: "msg" },
      h("div", { class: "msg-head" }, h("span", { class: "sender" }), h("a", { class: "recipient" }), h("time")),
      h("div", { class: "content" }),
      h("div", { class: "reactions" }),
      actionsBox(edit, del));
    skeletons.set(key, li);
  }
  return li;
}

// Brings the Edit and Delete buttons of `m`'s entry in line with what
// `view.may(m)` allows now; an entry already right is left alone (a
// pending "Confirm delete" with it).
export function updateActions(m, view) {
  const { edit, del } = view.may(m);
  const box = m.el.querySelector(".actions");
  if (!box || (box.querySelector(".edit") !== null) === edit && (box.querySelector(".delete") !== null) === del) return;
  box.replaceWith(actionsBox(edit, del));
}

// The others in a conversation: for a direct message, everyone but
// `me` (or `me` alone, writing to oneself).
function others(m, me) {
  const rest = m.display_recipient.filter((r) => r.id !== me);
  return rest.length ? rest : m.display_recipient;
}

function recipientLabel(m, me) {
  if (m.type === "stream") return `#${m.display_recipient} › ${m.subject ?? m.topic}`;
  return `Direct: ${others(m, me).map((r) => r.full_name).join(", ")}`;
}

function recipientNarrow(m, me) {
  if (m.type === "stream") return [{ operator: "channel", operand: m.display_recipient }, { operator: "topic", operand: m.subject ?? m.topic }];
  return [{ operator: "dm", operand: others(m, me).map((r) => r.email).join(",") }];
}

// A conversation's link and label, shared by the entries of one
// insertion (`seen`: a Map, or null).
function conversation(m, me, seen) {
  const key = m.type === "stream"
    ? `s${m.stream_id}\u0000${m.subject ?? m.topic}`
    : `d${m.display_recipient.map((r) => r.id).join(",")}`;
  let found = seen?.get(key);
  if (!found) {
    found = { href: toHash(recipientNarrow(m, me)), label: recipientLabel(m, me) };
    seen?.set(key, found);
  }
  return found;
}

// One message's entry. `view`: { me (user id), unread (has(id)),
// userName(id), realmEmoji (by id), may(m) ({edit, del}: the actions
// the user may take on it) }; `content`: its rendered HTML
// already parsed into a div.content, if it was.
export function messageRow(m, view, content = null, seen = null) {
  const { edit, del } = view.may(m);
  const li = skeleton(edit, del).cloneNode(true);
  li.setAttribute("data-id", m.id);
  if (view.unread.has(m.id)) li.className = "msg unread";
  const head = li.firstChild;
  const sender = head.firstChild;
  const recipient = sender.nextSibling;
  const time = recipient.nextSibling;
  sender.textContent = m.sender_full_name;
  const where = conversation(m, view.me, seen);
  recipient.setAttribute("href", where.href);
  recipient.textContent = where.label;
  const when = new Date(m.timestamp * 1000);
  time.dateTime = when.toISOString();
  time.title = FULL.format(when);
  time.textContent = TIME.format(when);
  if (m.last_edit_timestamp) head.append(h("span", { class: "edited" }, "(edited)"));
  else if (m.last_moved_timestamp) head.append(h("span", { class: "edited moved" }, "(moved)"));
  if (content) head.nextSibling.replaceWith(content);
  else setRendered(head.nextSibling, m.content);
  if (m.reactions?.length) renderReactions(m, li, view);
  return li;
}

// The rendered HTML of `messages` parsed in one pass, a div.content
// each; null when some message's markup did not stay inside its own div
// (then each is parsed alone).
function parseContents(messages) {
  const holder = document.createElement("div");
  holder.innerHTML = messages.map((m) => `<div class="content">${m.content}</div>`).join("");
  const divs = [...holder.childNodes];
  if (divs.length !== messages.length) return null;
  for (const d of divs) if (d.nodeName !== "DIV" || d.className !== "content") return null;
  finishRendered(holder);
  return divs;
}

// The list is a run of blocks (`ol.block`) of up to BLOCK entries, then
// the outbox (`ol.outbox`, the local echoes). A block off the screen
// skips style, layout and paint (`content-visibility: auto`), so a long
// list costs about what its visible part costs. The newest two blocks,
// and one being scrolled to or holding an open dialog, are always laid
// out (`.shown`): the list's end is where it looks, and nothing is
// clipped.
export const BLOCK = 25;

function block(rows) {
  const b = document.createElement("ol");
  b.className = "block";
  b.append(...rows);
  return b;
}

function blocks(list) {
  return list.querySelectorAll(":scope > .block");
}

// Inserts the entries of `messages` (ascending) at the start or the end
// of `list`, filling the block there before starting new ones; each
// message's entry is left in its `el`.
export function insertRows(list, messages, where, view) {
  const contents = parseContents(messages);
  const seen = new Map();
  const rows = messages.map((m, i) => (m.el = messageRow(m, view, contents?.[i], seen)));
  const all = blocks(list);
  if (where === "start") {
    const first = all[0];
    let end = rows.length;
    if (first) {
      const take = Math.min(end, Math.max(0, BLOCK - first.childElementCount));
      first.prepend(...rows.slice(end - take, end));
      end -= take;
    }
    const made = [];
    for (; end > 0; end -= BLOCK) made.unshift(block(rows.slice(Math.max(0, end - BLOCK), end)));
    list.prepend(...made);
  } else {
    const last = all[all.length - 1];
    let start = 0;
    if (last) {
      start = Math.min(rows.length, Math.max(0, BLOCK - last.childElementCount));
      last.append(...rows.slice(0, start));
    }
    const made = document.createDocumentFragment();
    for (; start < rows.length; start += BLOCK) made.append(block(rows.slice(start, start + BLOCK)));
    list.insertBefore(made, list.querySelector(":scope > .outbox"));
    showNewest(list);
  }
}

// Takes an entry out of the list, and its block when that empties.
export function removeRow(el) {
  const b = el.parentElement;
  el.remove();
  if (b?.classList.contains("block") && !b.firstElementChild) {
    const list = b.parentElement;
    b.remove();
    if (list) showNewest(list);
  }
}

function showNewest(list) {
  const all = blocks(list);
  all.forEach((b, i) => b.classList.toggle("shown", i >= all.length - 2));
}

// Lays out the block of `row` in full, before scrolling to it.
export function reveal(row) {
  row.closest(".block")?.classList.add("shown");
}

function emojiFace(r, view) {
  if (r.reaction_type === "realm_emoji") {
    const e = view.realmEmoji[r.emoji_code];
    return e ? h("img", { src: e.source_url, alt: `:${r.emoji_name}:`, class: "emoji" }) : `:${r.emoji_name}:`;
  }
  if (r.reaction_type === "zulip_extra_emoji") return `:${r.emoji_name}:`;
  return emojiChar(r.emoji_code) ?? "?";
}

// The reaction buttons under a message, one per emoji with its count.
export function renderReactions(m, el, view) {
  const box = el.querySelector(".reactions");
  const groups = new Map();
  for (const r of m.reactions) {
    const key = `${r.reaction_type}:${r.emoji_code}`;
    if (!groups.has(key)) groups.set(key, { r, users: [] });
    groups.get(key).users.push(r.user_id ?? r.user?.id);
  }
  box.replaceChildren(...[...groups.values()].map(({ r, users }) => h("button", {
    type: "button", class: "reaction", "aria-pressed": String(users.includes(view.me)),
    title: users.map(view.userName).join(", "), "aria-label": `${r.emoji_name}: ${users.length}`,
    dataset: { action: "reaction", emoji: r.emoji_name },
  }, emojiFace(r, view), " ", String(users.length))));
}
