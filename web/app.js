// natter's web client: sign-in, the conversation lists, the message list
// of a narrow, compose, and live updates from one event queue per tab.

import { api, web, upload, setCsrfToken, ApiError } from "./api.js";
import { h, append, setRendered, toggleSpoiler, emojiChar, $ } from "./dom.js";
import { parse, unparse, toHash, fromHash } from "./narrow.js";
import { messageRow, insertRows, removeRow, reveal, renderReactions, updateActions } from "./render.js";
import { mayEdit, mayDelete } from "./rules.js";

const PAGE = 50;
const S = {
  me: null,
  queueId: null,
  lastEventId: -1,
  users: new Map(),
  subs: new Map(),
  channels: new Map(), // channel id → channel object: every channel the user knows of
  realm: {}, // the organization settings Edit and Delete depend on (rules.js)
  groups: new Map(), // group id → { members: Set, subgroups: [ids] }
  unread: new Map(), // message id → conversation key
  recentDms: [],
  topics: new Map(), // channel id → [{name, max_id}]
  realmEmoji: {},
  emoji: null, // [{name, char}]
  narrow: [],
  messages: [], // the list shown, ascending
  byId: new Map(),
  foundOldest: false,
  foundNewest: false,
  loadingOlder: false,
  localId: 0,
  pending: new Map(), // local id → element
  typing: new Map(), // user id → { timer, key }: who types where
  typingExpiryMs: 15_000,
  presence: {}, // user id → { active_timestamp, idle_timestamp }
  presencePingSecs: 60,
  offlineSecs: 140,
  dmTo: [], // the compose box's direct-message recipients (user ids)
  generation: 0, // bumped at every (re-)register: stale pollers stop
};

const root = document.body;

// ---- Start: signed in or not ----

async function start() {
  try {
    const session = await web("GET", "/login/session");
    signedIn(session);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) showSignIn();
    else showFatal(e);
  }
}

function showFatal(e) {
  root.replaceChildren(h("main", { class: "signin" }, h("h1", {}, "natter"), h("p", { role: "alert" }, String(e.message || e))));
}

function showSignIn(message) {
  const error = h("p", { class: "error", role: "alert" }, message || "");
  const email = h("input", { id: "signin-email", name: "username", type: "email", autocomplete: "username", required: true });
  const password = h("input", { id: "signin-password", name: "password", type: "password", autocomplete: "current-password", required: true });
  const form = h(
    "form",
    { class: "card", onsubmit: (ev) => { ev.preventDefault(); signIn({ username: email.value, password: password.value }, error); } },
    h("label", { for: "signin-email" }, "Email"), email,
    h("label", { for: "signin-password" }, "Password"), password,
    h("button", { type: "submit" }, "Sign in"),
  );
  const dev = h("section", { class: "card", "aria-labelledby": "dev-title", hidden: true }, h("h2", { id: "dev-title" }, "Development accounts"));
  root.replaceChildren(h("main", { class: "signin" }, h("h1", {}, "Sign in to natter"), error, form, dev));
  web("GET", "/login/dev_accounts").then((r) => {
    dev.hidden = false;
    append(dev, h("ul", {}, r.accounts.map((a) =>
      h("li", {}, h("button", { type: "button", class: "link", onclick: () => signIn({ username: a.email }, error) }, `${a.full_name} (${a.email})`)))));
  }, () => {});
}

async function signIn(params, errorEl) {
  try {
    signedIn(await web("POST", "/login", params));
  } catch (e) {
    errorEl.textContent = e.message;
  }
}

function signedIn(session) {
  setCsrfToken(session.csrf_token);
  S.me = session;
  renderShell();
  register().then(() => {
    S.narrow = fromHash(location.hash);
    showNarrow(S.narrow);
  }, showFatal);
}

async function signOut() {
  S.generation++;
  const queue = S.queueId;
  S.queueId = null;
  if (queue) await api("DELETE", "/events", { queue_id: queue }).catch(() => {});
  await web("POST", "/logout").catch(() => {});
  setCsrfToken(null);
  history.replaceState(null, "", "/");
  showSignIn("You have signed out.");
}

// ---- The page's frame ----

function renderShell() {
  const search = h("input", { id: "search", type: "search", name: "q", placeholder: "channel:general topic:lunch sender:… is:unread words", autocomplete: "off" });
  root.replaceChildren(
    h("header", { class: "top" },
      h("button", { type: "button", id: "menu", class: "icon", "aria-label": "Conversations", "aria-controls": "sidebar", "aria-expanded": "false", onclick: toggleSidebar }, "☰"),
      h("span", { class: "brand" }, "natter"),
      h("form", { role: "search", class: "search", onsubmit: (ev) => { ev.preventDefault(); go(parse(search.value)); } },
        h("label", { for: "search", class: "visually-hidden" }, "Search messages"), search),
      h("span", { class: "me" }, S.me.full_name),
      h("button", { type: "button", id: "sign-out", onclick: signOut }, "Sign out")),
    h("div", { class: "layout" },
      h("nav", { id: "sidebar", "aria-label": "Conversations" },
        h("ul", { class: "views" },
          h("li", {}, h("a", { href: "#inbox", id: "nav-inbox" }, "Inbox")),
          h("li", {}, h("a", { href: "#", id: "nav-all" }, "All messages"))),
        h("h2", {}, "Channels"), h("ul", { id: "channels" }),
        h("div", { class: "section-head" },
          h("h2", {}, "Direct messages"),
          h("button", { type: "button", id: "new-dm", class: "link", onclick: newDm }, "New")),
        h("ul", { id: "dms" }),
        h("h2", { id: "people-title" }, "People"), h("ul", { id: "people", "aria-labelledby": "people-title" })),
      h("main", { id: "feed" },
        h("h1", { id: "narrow-title" }, ""),
        h("section", { id: "inbox", hidden: true, "aria-label": "Unread conversations" }),
        h("div", { id: "messages", "aria-live": "polite", onscroll: onScroll, onclick: onListClick, onmouseover: onListPointer, onfocusin: onListPointer },
          h("ol", { id: "outbox", class: "outbox", "aria-label": "Sending" })),
        h("button", { type: "button", id: "new-messages", hidden: true, onclick: () => scrollToBottom() }, "New messages ↓"),
        h("p", { id: "typing", "aria-live": "polite" }),
        composeForm())),
    h("p", { id: "status", role: "status" }),
    h("p", { id: "connection", role: "alert", hidden: true }));
}

document.addEventListener("keydown", onKey);

// Spoilers, in the list and the preview alike: a click, Enter or Space
// on the header shows or hides the content.
document.addEventListener("click", (ev) => {
  const header = ev.target.closest?.(".spoiler-header");
  if (header) toggleSpoiler(header);
});
document.addEventListener("keydown", (ev) => {
  if ((ev.key === "Enter" || ev.key === " ") && ev.target.classList?.contains("spoiler-header")) {
    ev.preventDefault();
    toggleSpoiler(ev.target);
  }
});

function toggleSidebar() {
  const open = document.body.classList.toggle("sidebar-open");
  $("#menu").setAttribute("aria-expanded", String(open));
}

function setStatus(text) {
  const el = $("#status");
  if (el) el.textContent = text;
}

function onKey(ev) {
  if (ev.key !== "Escape" || !S.queueId) return;
  if ($("#emoji-picker")) return closePicker();
  const editing = $(".msg .edit-form");
  const edited = editing && S.byId.get(Number(editing.closest(".msg").dataset.id));
  if (edited) return endEdit(edited);
  const preview = $("#preview");
  if (preview && !preview.hidden) return togglePreview(false);
  if (document.body.classList.contains("sidebar-open")) toggleSidebar();
}

// ---- Register and the event queue ----

async function register() {
  const r = await api("POST", "/register", {
    apply_markdown: true,
    client_gravatar: false,
    slim_presence: true,
    client_capabilities: { notification_settings_null: true, simplified_presence_events: true },
  });
  S.generation++;
  S.queueId = r.queue_id;
  S.lastEventId = r.last_event_id;
  // Deactivated accounts too (marked so): their names still label old
  // messages, and a reactivation brings them back.
  S.users = new Map([
    ...(r.realm_non_active_users || []).map((u) => [u.user_id, { ...u, is_active: false }]),
    ...r.realm_users.map((u) => [u.user_id, u]),
  ]);
  S.subs = new Map(r.subscriptions.map((s) => [s.stream_id, s]));
  S.channels = new Map([...(r.never_subscribed || []), ...(r.unsubscribed || []), ...r.subscriptions].map((s) => [s.stream_id, s]));
  S.realm = {};
  for (const name of REALM_RULES) S.realm[name] = r[`realm_${name}`];
  S.groups = new Map((r.realm_user_groups || []).map((g) => [g.id, groupOf(g)]));
  S.realmEmoji = r.realm_emoji || {};
  S.recentDms = r.recent_private_conversations || [];
  S.presence = r.presences || {};
  S.presencePingSecs = r.server_presence_ping_interval_seconds || 60;
  S.offlineSecs = r.server_presence_offline_threshold_seconds || 140;
  S.typingExpiryMs = r.server_typing_started_expiry_period_milliseconds || 15_000;
  S.unread = new Map();
  const unread = r.unread_msgs || {};
  for (const s of unread.streams || []) for (const id of s.unread_message_ids) S.unread.set(id, channelKey(s.stream_id, s.topic));
  for (const p of unread.pms || []) {
    const other = p.other_user_id ?? p.sender_id;
    for (const id of p.unread_message_ids) S.unread.set(id, dmKey([other]));
  }
  for (const g of unread.huddles || []) {
    for (const id of g.unread_message_ids) S.unread.set(id, dmKey(g.user_ids_string.split(",").map(Number)));
  }
  S.topics.clear();
  renderSidebar();
  renderPeople();
  poll(S.generation);
  reportPresence();
}

// The organization settings that decide who may edit and delete what.
const REALM_RULES = [
  "allow_message_editing", "message_content_edit_limit_seconds", "message_content_delete_limit_seconds",
  "can_delete_any_message_group", "can_delete_own_message_group",
];

function groupOf(g) {
  return { members: new Set(g.members), subgroups: g.direct_subgroup_ids || [] };
}

// ---- Presence ----

// As Zulip's web app: the page reports every ping interval (a minute),
// "active" while it is shown and "idle" while it is hidden, and at once
// when it is shown or hidden. The reply carries everyone's presence.
let presenceTimer = null;

async function reportPresence() {
  if (!S.queueId) return;
  clearTimeout(presenceTimer);
  presenceTimer = setTimeout(reportPresence, S.presencePingSecs * 1000);
  const status = document.visibilityState === "visible" ? "active" : "idle";
  try {
    const r = await api("POST", "/users/me/presence", { status, new_user_input: status === "active", slim_presence: true });
    Object.assign(S.presence, r.presences || {});
  } catch {
    // The next report tries again.
  }
  renderPeople();
  renderDms();
}

document.addEventListener("visibilitychange", reportPresence);

// Zulip's rule: active if reported active within the offline threshold,
// idle if connected within it, else offline.
function presenceOf(id) {
  const p = S.presence[id];
  if (!p) return "offline";
  const now = Date.now() / 1000;
  if (p.active_timestamp && now - p.active_timestamp < S.offlineSecs) return "active";
  if (p.idle_timestamp && now - p.idle_timestamp < S.offlineSecs) return "idle";
  return "offline";
}

function onPresence(event) {
  if (event.presences) {
    for (const [id, p] of Object.entries(event.presences)) S.presence[id] = p;
  } else if (event.presence) {
    // The legacy per-client form.
    const p = (S.presence[event.user_id] = { ...S.presence[event.user_id] });
    for (const c of Object.values(event.presence)) {
      if (c.status === "active") p.active_timestamp = Math.max(p.active_timestamp || 0, c.timestamp);
      p.idle_timestamp = Math.max(p.idle_timestamp || 0, c.timestamp);
    }
  }
  renderPeople();
  renderDms();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- The event queue ----

const RETRY_FIRST_MS = 1000;
const RETRY_CAP_MS = 30_000;

// The wait before retry number `failures`: doubling from a second up to
// half a minute, each drawn from the upper half of its range so that
// tabs cut off together do not come back together.
function retryDelay(failures) {
  const scale = Math.min(RETRY_FIRST_MS * 2 ** (failures - 1), RETRY_CAP_MS);
  return Math.round(scale / 2 + (Math.random() * scale) / 2);
}

function showConnection(text, failures = 0, ms = 0) {
  const el = $("#connection");
  if (!el) return;
  el.hidden = !text;
  el.textContent = text;
  el.dataset.failures = String(failures);
  el.dataset.retryMs = String(ms);
}

async function waitToRetry(failures) {
  const ms = retryDelay(failures);
  showConnection(`Connection lost. Reconnecting in ${Math.ceil(ms / 1000)} s…`, failures, ms);
  await sleep(ms);
  if ($("#connection")) $("#connection").textContent = "Reconnecting…";
}

// Long-polls the queue. Network trouble: retried with back-off. A queue
// the server no longer has (a restart, an idle tab): register again and
// refetch what is shown, keeping the compose box as it is.
async function poll(generation) {
  let failures = 0;
  while (generation === S.generation) {
    try {
      const r = await api("GET", "/events", { queue_id: S.queueId, last_event_id: S.lastEventId });
      if (generation !== S.generation) return;
      if (failures) showConnection("");
      failures = 0;
      for (const event of r.events) {
        S.lastEventId = Math.max(S.lastEventId, event.id);
        try {
          handleEvent(event);
        } catch (e) {
          console.error("event", event, e);
        }
      }
    } catch (e) {
      if (generation !== S.generation) return;
      if (e instanceof ApiError && e.status === 401) return showSignIn("Your session has ended.");
      if (e instanceof ApiError && e.code === "BAD_EVENT_QUEUE_ID") return reconnect(generation);
      failures++;
      await waitToRetry(failures);
    }
  }
}

// A new queue and a fresh copy of what is shown, retried with back-off.
async function reconnect(generation) {
  showConnection("Reconnecting…");
  let failures = 0;
  while (generation === S.generation) {
    try {
      await register();
      showConnection("");
      await showNarrow(S.narrow, { keepCompose: true });
      return;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return showSignIn("Your session has ended.");
      failures++;
      await waitToRetry(failures);
    }
  }
}

function handleEvent(event) {
  switch (event.type) {
    case "message":
      return onMessage(event.message, event.flags || [], event.local_message_id);
    case "update_message":
      return onUpdate(event);
    case "delete_message":
      return onDelete(event.message_ids || [event.message_id]);
    case "reaction":
      return onReaction(event);
    case "update_message_flags":
      return onFlags(event);
    case "typing":
      return onTyping(event);
    case "presence":
      return onPresence(event);
    case "subscription":
      if (event.op === "add") for (const s of event.subscriptions) { S.subs.set(s.stream_id, s); S.channels.set(s.stream_id, s); }
      if (event.op === "remove") for (const s of event.subscriptions) S.subs.delete(s.stream_id);
      renderSidebar();
      return updateAllActions();
    case "stream":
      return onStream(event);
    case "realm":
      return onRealm(event);
    case "user_group":
      return onUserGroup(event);
    case "realm_user":
      return onRealmUser(event);
    case "realm_emoji":
      S.realmEmoji = event.realm_emoji;
      return;
  }
}

// An organization setting changed: those Edit and Delete depend on are
// applied to every entry at once.
function onRealm(event) {
  const changed = event.op === "update_dict" ? event.data || {} : event.op === "update" ? { [event.property]: event.value } : {};
  let rules = false;
  for (const [name, value] of Object.entries(changed)) {
    if (!REALM_RULES.includes(name)) continue;
    S.realm[name] = value;
    rules = true;
  }
  if (rules) updateAllActions();
}

// Group membership (a role change moves the user between system groups
// this way too).
function onUserGroup(event) {
  const g = S.groups.get(event.group_id);
  switch (event.op) {
    case "add":
      S.groups.set(event.group.id, groupOf(event.group));
      break;
    case "remove":
      S.groups.delete(event.group_id);
      break;
    case "add_members":
      if (g) for (const id of event.user_ids) g.members.add(id);
      break;
    case "remove_members":
      if (g) for (const id of event.user_ids) g.members.delete(id);
      break;
    case "add_subgroups":
      if (g) g.subgroups = [...new Set([...g.subgroups, ...event.direct_subgroup_ids])];
      break;
    case "remove_subgroups":
      if (g) g.subgroups = g.subgroups.filter((id) => !event.direct_subgroup_ids.includes(id));
      break;
    default:
      return;
  }
  updateAllActions();
}

// A channel's settings: its name in the sidebar, its delete groups for
// the entries' actions.
function onStream(event) {
  if (event.op === "delete") {
    for (const s of event.streams) S.channels.delete(s.stream_id);
    return updateAllActions();
  }
  if (event.op !== "update") return;
  for (const c of [S.channels.get(event.stream_id), S.subs.get(event.stream_id)]) {
    if (c) c[event.property] = event.value;
  }
  if (event.property === "name") fillRecipients();
  renderSidebar();
  if (event.property.startsWith("can_delete_")) updateAllActions();
}

// Someone joined, changed (a name, an address, deactivated or
// reactivated) or went out of sight: the buddy list, the direct-message
// list, the picked recipients and an open people picker follow at once.
function onRealmUser(event) {
  const person = event.person;
  const known = S.users.get(person.user_id);
  if (event.op === "add") S.users.set(person.user_id, person);
  if (event.op === "update" && known) {
    const { new_email: email, ...rest } = person;
    Object.assign(known, rest);
    if (email !== undefined) known.email = email;
  }
  if (event.op === "remove") S.users.delete(person.user_id);
  renderPeople();
  renderDms();
  renderPills();
  const list = $("#dm-options");
  if (list && !list.hidden) showPeopleOptions($("#compose-dm").value);
}

// ---- Conversations and unread counts ----

function channelKey(streamId, topic) {
  return `s:${streamId}:${topic.toLowerCase()}`;
}

function dmKey(userIds) {
  const ids = [...new Set(userIds.filter((id) => id !== S.me.user_id))].sort((a, b) => a - b);
  return `d:${ids.join(",") || S.me.user_id}`;
}

function keyOf(m) {
  if (m.type === "stream") return channelKey(m.stream_id, m.subject ?? m.topic);
  return dmKey(m.display_recipient.map((r) => r.id));
}

function counts() {
  const byChannel = new Map();
  const byKey = new Map();
  for (const key of S.unread.values()) {
    byKey.set(key, (byKey.get(key) || 0) + 1);
    if (key.startsWith("s:")) {
      const id = Number(key.split(":")[1]);
      byChannel.set(id, (byChannel.get(id) || 0) + 1);
    }
  }
  return { byChannel, byKey };
}

function badge(n) {
  return n ? h("span", { class: "badge", "aria-label": `${n} unread` }, String(n)) : null;
}

function userName(id) {
  const u = S.users.get(id);
  return u ? u.full_name : `user ${id}`;
}

function userEmail(id) {
  const u = S.users.get(id);
  return u ? u.email : String(id);
}

function narrowChannelId() {
  const term = S.narrow.find((t) => t.operator === "channel");
  if (!term) return null;
  const byId = S.subs.get(Number(term.operand));
  if (byId) return byId.stream_id;
  const sub = [...S.subs.values()].find((s) => s.name.toLowerCase() === String(term.operand).toLowerCase());
  return sub ? sub.stream_id : null;
}

function renderSidebar() {
  renderChannels();
  renderDms();
  const inbox = $("#inbox");
  if (inbox && !inbox.hidden) renderInbox();
}

function renderChannels() {
  const list = $("#channels");
  if (!list) return;
  const { byChannel, byKey } = counts();
  const current = narrowChannelId();
  const topicTerm = S.narrow.find((t) => t.operator === "topic");
  const subs = [...S.subs.values()].sort((a, b) => a.name.localeCompare(b.name));
  list.replaceChildren(...subs.map((s) => {
    const item = h("li", { dataset: { channelId: s.stream_id } },
      h("a", { href: toHash([{ operator: "channel", operand: s.name }]), class: current === s.stream_id && !topicTerm ? "active" : "" },
        h("span", { class: "swatch", "aria-hidden": "true" }, "#"), h("span", { class: "name" }, s.name), badge(byChannel.get(s.stream_id))));
    if (current === s.stream_id) {
      const topics = S.topics.get(s.stream_id);
      if (topics) {
        item.append(h("ul", { class: "topics", "aria-label": `Topics of ${s.name}` }, topics.slice(0, 30).map((t) =>
          h("li", {}, h("a", {
            href: toHash([{ operator: "channel", operand: s.name }, { operator: "topic", operand: t.name }]),
            class: topicTerm && topicTerm.operand.toLowerCase() === t.name.toLowerCase() ? "active" : "",
          }, h("span", { class: "name" }, t.name), badge(byKey.get(channelKey(s.stream_id, t.name))))))));
      } else {
        loadTopics(s.stream_id);
      }
    }
    return item;
  }));
}

async function loadTopics(streamId) {
  S.topics.set(streamId, []);
  try {
    const r = await api("GET", `/users/me/${streamId}/topics`);
    S.topics.set(streamId, r.topics.sort((a, b) => b.max_id - a.max_id));
  } catch {
    S.topics.delete(streamId);
    return;
  }
  renderChannels();
}

function noteTopic(m) {
  if (m.type !== "stream" || !S.topics.has(m.stream_id)) return;
  const topic = m.subject ?? m.topic;
  const list = S.topics.get(m.stream_id).filter((t) => t.name.toLowerCase() !== topic.toLowerCase());
  list.unshift({ name: topic, max_id: m.id });
  S.topics.set(m.stream_id, list);
}

function renderDms() {
  const list = $("#dms");
  if (!list) return;
  const { byKey } = counts();
  const keys = new Map();
  for (const c of S.recentDms) keys.set(dmKey(c.user_ids), { ids: c.user_ids, max: c.max_message_id });
  for (const key of byKey.keys()) {
    if (key.startsWith("d:") && !keys.has(key)) keys.set(key, { ids: key.slice(2).split(",").map(Number), max: Infinity });
  }
  const sorted = [...keys.entries()].sort((a, b) => b[1].max - a[1].max).slice(0, 20);
  list.replaceChildren(...sorted.map(([key, c]) => {
    const ids = c.ids.length ? c.ids : [S.me.user_id];
    const states = ids.map(presenceOf);
    const status = states.includes("active") ? "active" : states.includes("idle") ? "idle" : "offline";
    return h("li", {}, h("a", { href: toHash([{ operator: "dm", operand: ids.map(userEmail).join(",") }]) },
      h("span", { class: `dot ${status}`, role: "img", "aria-label": status }),
      h("span", { class: "name" }, ids.map(userName).join(", ")), badge(byKey.get(key))));
  }));
}

const PRESENCE_ORDER = { active: 0, idle: 1, offline: 2 };
const byName = new Intl.Collator().compare;
const PEOPLE_SHOWN = 100;

// The buddy list: the realm's people (not bots), active first, then
// idle, then offline, each by name; drawn on presence news, not on
// every message.
function renderPeople() {
  const list = $("#people");
  if (!list) return;
  const people = [...S.users.values()]
    .filter((u) => !u.is_bot && u.is_active !== false)
    .map((u) => ({ u, status: presenceOf(u.user_id) }))
    .sort((a, b) => PRESENCE_ORDER[a.status] - PRESENCE_ORDER[b.status] || byName(a.u.full_name, b.u.full_name))
    .slice(0, PEOPLE_SHOWN);
  list.replaceChildren(...people.map(({ u, status }) =>
    h("li", { dataset: { userId: u.user_id, presence: status } },
      h("a", { href: toHash([{ operator: "dm", operand: u.email }]), title: `${u.full_name} (${status})` },
        h("span", { class: `dot ${status}`, role: "img", "aria-label": status }),
        h("span", { class: "name" }, u.full_name)))));
}

function renderInbox() {
  const box = $("#inbox");
  if (!box) return; // signed out meanwhile: no frame to draw in
  const { byKey } = counts();
  const rows = [...byKey.entries()].sort();
  if (!rows.length) return box.replaceChildren(h("p", { class: "empty" }, "No unread messages."));
  box.replaceChildren(h("ul", {}, rows.map(([key, n]) => {
    let label;
    let narrow;
    if (key.startsWith("s:")) {
      const [, id, ...rest] = key.split(":");
      const sub = S.subs.get(Number(id));
      const anyId = [...S.unread.entries()].find(([, k]) => k === key)[0];
      const topic = S.byId.get(anyId)?.subject ?? rest.join(":");
      label = `#${sub ? sub.name : id} › ${topic}`;
      narrow = [{ operator: "channel", operand: sub ? sub.name : id }, { operator: "topic", operand: topic }];
    } else {
      const ids = key.slice(2).split(",").map(Number);
      label = `Direct: ${ids.map(userName).join(", ")}`;
      narrow = [{ operator: "dm", operand: ids.map(userEmail).join(",") }];
    }
    return h("li", {}, h("a", { href: toHash(narrow) }, h("span", { class: "name" }, label), badge(n)));
  })));
}

// ---- Narrows and the message list ----

function go(narrow) {
  location.hash = toHash(narrow);
}

window.addEventListener("hashchange", () => {
  if (!S.queueId) return;
  document.body.classList.remove("sidebar-open");
  if (location.hash === "#inbox") return showInbox();
  showNarrow(fromHash(location.hash));
});

function showInbox() {
  $("#inbox").hidden = false;
  $("#messages").hidden = true;
  $("#narrow-title").textContent = "Inbox";
  renderInbox();
}

function title(narrow) {
  if (!narrow.length) return "All messages";
  return unparse(narrow);
}

// Shows the messages of `narrow`: around the first unread, or, with
// `keepPlace`, around the entry at the top of the list with that entry
// left where it is on the screen.
async function showNarrow(narrow, { keepCompose = false, keepPlace = false } = {}) {
  if (location.hash === "#inbox") return showInbox();
  S.narrow = narrow;
  $("#inbox").hidden = true;
  const list = $("#messages");
  list.hidden = false;
  $("#narrow-title").textContent = title(narrow);
  $("#search").value = unparse(narrow);
  renderChannels();
  renderTyping();
  if (!keepCompose) prefillCompose(narrow);
  const generation = S.generation;
  const place = keepPlace ? topEntry() : null;
  let r;
  try {
    r = await api("GET", "/messages", { anchor: place ? place.id : "first_unread", num_before: PAGE, num_after: PAGE, narrow, apply_markdown: true });
  } catch (e) {
    list.replaceChildren(h("p", { class: "empty", role: "alert" }, e.message), $("#outbox"));
    return;
  }
  if (generation !== S.generation || narrow !== S.narrow) return;
  S.messages = [];
  S.byId = new Map();
  S.foundOldest = r.found_oldest;
  S.foundNewest = r.found_newest;
  list.replaceChildren($("#outbox"));
  addMessages(r.messages, "end");
  if (!r.messages.length) list.prepend(h("p", { class: "empty" }, "No messages here yet."));
  const firstUnread = S.messages.find((m) => S.unread.has(m.id));
  const kept = place && S.byId.get(place.id);
  if (kept) {
    reveal(kept.el);
    list.scrollTop += kept.el.getBoundingClientRect().top - place.top;
  } else if (firstUnread) {
    reveal(firstUnread.el);
    firstUnread.el.scrollIntoView({ block: "center" });
  } else {
    scrollToBottom();
  }
  if (!S.foundNewest) loadNewer();
}

// The entry at the top of the list's view, and where it is on the screen.
function topEntry() {
  const top = $("#messages").getBoundingClientRect().top;
  const m = S.messages.find((x) => x.el.getBoundingClientRect().bottom > top);
  return m && { id: m.id, top: m.el.getBoundingClientRect().top };
}

async function loadNewer() {
  while (!S.foundNewest && S.messages.length) {
    const narrow = S.narrow;
    const last = S.messages[S.messages.length - 1].id;
    const r = await api("GET", "/messages", { anchor: last, num_before: 0, num_after: PAGE, include_anchor: false, narrow, apply_markdown: true });
    if (narrow !== S.narrow) return;
    S.foundNewest = r.found_newest;
    addMessages(r.messages, "end");
  }
}

async function loadOlder() {
  if (S.loadingOlder || S.foundOldest || !S.messages.length) return;
  S.loadingOlder = true;
  const narrow = S.narrow;
  const list = $("#messages");
  try {
    const r = await api("GET", "/messages", { anchor: S.messages[0].id, num_before: PAGE, num_after: 0, include_anchor: false, narrow, apply_markdown: true });
    if (narrow !== S.narrow) return;
    S.foundOldest = r.found_oldest;
    // The entry at the top stays where it is on the screen.
    const anchor = S.messages[0].el;
    const top = anchor.getBoundingClientRect().top;
    addMessages(r.messages, "start");
    list.scrollTop += anchor.getBoundingClientRect().top - top;
  } finally {
    S.loadingOlder = false;
  }
}

function onScroll() {
  const list = $("#messages");
  if (list.scrollTop < 200) loadOlder();
  if (atBottom()) $("#new-messages").hidden = true;
}

function atBottom() {
  const list = $("#messages");
  return list.scrollHeight - list.scrollTop - list.clientHeight < 40;
}

function scrollToBottom() {
  const list = $("#messages");
  list.scrollTop = list.scrollHeight;
  $("#new-messages").hidden = true;
}

// What the entries need to know of the page's state.
function view() {
  const rules = { me: S.me.user_id, realm: S.realm, groups: S.groups, channels: S.channels };
  const now = Date.now() / 1000;
  const may = (m) => ({ edit: mayEdit(rules, m, now), del: mayDelete(rules, m, now) });
  return { me: S.me.user_id, unread: S.unread, userName, realmEmoji: S.realmEmoji, may };
}

// Edit and Delete as the rules allow them now, on every entry.
function updateAllActions() {
  const v = view();
  for (const m of S.messages) updateActions(m, v);
}

// An entry's actions are checked again as they come into view (the
// pointer onto it or one of its parts, or the focus into it): time may
// have passed a limit.
function onListPointer(ev) {
  const row = ev.target.closest?.(".msg[data-id]");
  const m = row && S.byId.get(Number(row.dataset.id));
  if (m) updateActions(m, view());
}

// Adds `messages` (ascending, any already shown skipped) at the start or
// the end of the list (before the local echoes).
function addMessages(messages, where) {
  const fresh = [];
  for (const m of messages) {
    if (S.byId.has(m.id)) continue;
    m.reactions ??= [];
    S.byId.set(m.id, m);
    fresh.push(m);
  }
  if (!fresh.length) return;
  const list = $("#messages");
  list.querySelector(":scope > .empty")?.remove();
  insertRows(list, fresh, where, view());
  if (where === "start") S.messages.unshift(...fresh);
  else S.messages.push(...fresh);
  for (const m of fresh) if (S.unread.has(m.id)) seen.observe(m.el);
}

// The buttons of every entry: one listener for the list.
function onListClick(ev) {
  const button = ev.target.closest("button[data-action]");
  const row = button?.closest(".msg[data-id]");
  const m = row && S.byId.get(Number(row.dataset.id));
  if (!m) return;
  const action = button.dataset.action;
  if (action === "edit" || action === "delete") {
    // Out of the rules since the entry was drawn: the button goes.
    const may = view().may(m);
    if (!(action === "edit" ? may.edit : may.del)) {
      updateActions(m, view());
      return setStatus(action === "edit" ? "This message can no longer be edited." : "This message can no longer be deleted.");
    }
  }
  switch (action) {
    case "react":
      return openPicker(m, button);
    case "edit":
      return startEdit(m);
    case "delete":
      return confirmDelete(m, button);
    case "reaction":
      return react(m, button.dataset.emoji, button.getAttribute("aria-pressed") !== "true");
  }
}

// ---- Live changes ----

function matchesLocally(m) {
  for (const t of S.narrow) {
    const operand = String(t.operand).toLowerCase();
    let ok;
    switch (t.operator) {
      case "channel":
        ok = m.type === "stream" && (String(m.stream_id) === operand || String(m.display_recipient).toLowerCase() === operand);
        break;
      case "topic":
        ok = m.type === "stream" && (m.subject ?? m.topic).toLowerCase() === operand;
        break;
      case "dm": {
        if (m.type === "stream") { ok = false; break; }
        const want = dmKey(operand.split(",").map((e) => [...S.users.values()].find((u) => u.email.toLowerCase() === e.trim())?.user_id ?? -1));
        ok = keyOf(m) === want;
        break;
      }
      case "sender":
        ok = m.sender_email.toLowerCase() === operand || String(m.sender_id) === operand;
        break;
      case "is":
        if (operand === "dm" || operand === "private") ok = m.type === "private";
        else if (operand === "unread") ok = true;
        else return null;
        break;
      default:
        return null;
    }
    if (t.negated) ok = !ok;
    if (!ok) return false;
  }
  return true;
}

async function matchesNarrow(m) {
  const local = matchesLocally(m);
  if (local !== null) return local;
  try {
    const r = await api("GET", "/messages/matches_narrow", { msg_ids: [m.id], narrow: S.narrow });
    return Boolean(r.messages[m.id]);
  } catch {
    return false;
  }
}

async function onMessage(m, flags, localId) {
  typingEnded(m.sender_id);
  if (!flags.includes("read") && m.sender_id !== S.me.user_id) S.unread.set(m.id, keyOf(m));
  if (m.type === "private") {
    const ids = m.display_recipient.map((r) => r.id).filter((id) => id !== S.me.user_id);
    S.recentDms = [{ user_ids: ids, max_message_id: m.id }, ...S.recentDms.filter((c) => dmKey(c.user_ids) !== dmKey(ids))];
  }
  noteTopic(m);
  const pending = localId != null ? S.pending.get(String(localId)) : null;
  if (pending) {
    S.pending.delete(String(localId));
    pending.remove();
  }
  renderSidebar();
  const narrow = S.narrow;
  if (!$("#messages").hidden && S.foundNewest && (await matchesNarrow(m)) && narrow === S.narrow) {
    const stick = atBottom();
    addMessages([m], "end");
    if (stick || pending) scrollToBottom();
    else $("#new-messages").hidden = false;
  }
}

function onUpdate(event) {
  const m = S.byId.get(event.message_id);
  if (m) {
    if (event.rendered_content !== undefined) {
      m.content = event.rendered_content;
      m.last_edit_timestamp = event.edit_timestamp;
      redraw(m);
    }
  }
  if (event.orig_subject !== undefined) onMove(event);
}

// Draws `m`'s entry anew in place.
function redraw(m) {
  const el = messageRow(m, view());
  m.el.replaceWith(el);
  m.el = el;
  if (S.unread.has(m.id)) seen.observe(el);
}

// Takes `m` out of the list shown (not out of the unread counts).
function dropFromList(m) {
  removeRow(m.el);
  S.byId.delete(m.id);
  S.messages = S.messages.filter((x) => x.id !== m.id);
}

// As many message ids as GET /messages/matches_narrow takes.
const MATCH_AT_ONCE = 5000;
const RESOLVED = "✔ ";

// As the server tells them: `new` is `old` with the prefix added, or
// `old` with its check marks taken off.
function isResolveToggle(old, now) {
  if (!old.startsWith(RESOLVED)) return now === RESOLVED + old;
  return !now.startsWith(RESOLVED) && old.replace(/^[✔ ]+/, "") === now;
}

// Messages moved to another topic or channel, as Zulip's web app takes
// them: each moved message (and its unread mark) goes to its new place;
// those shown that the narrow no longer matches leave the list, and moved
// messages the narrow now matches come in (the narrow refetched, or the
// list's newer end loaded, when they are all past it).
async function onMove(event) {
  const ids = event.message_ids || [event.message_id];
  const streamId = event.new_stream_id ?? event.stream_id;
  const topic = event.subject ?? event.topic ?? event.orig_subject;
  const channel = S.channels.get(streamId);
  // Marking a topic resolved or unresolved (the "✔ " prefix) is no move.
  const resolving = event.new_stream_id === undefined && isResolveToggle(event.orig_subject, topic);
  for (const id of ids) {
    if (S.unread.has(id)) S.unread.set(id, channelKey(streamId, topic));
    const m = S.byId.get(id);
    if (!m) continue;
    m.stream_id = streamId;
    m.subject = topic;
    delete m.topic;
    if (channel) m.display_recipient = channel.name;
    if (!resolving) m.last_moved_timestamp = event.edit_timestamp;
    redraw(m);
  }
  // The topic lists of both channels are read again when next shown.
  S.topics.delete(event.stream_id);
  S.topics.delete(streamId);
  renderSidebar();
  if ($("#messages").hidden) return;
  const narrow = S.narrow;
  // Moved messages not shown that would sit within the list's span.
  const first = S.messages[0]?.id ?? -Infinity;
  const last = S.messages[S.messages.length - 1]?.id ?? Infinity;
  const outside = ids.filter((id) => !S.byId.has(id)
    && (S.foundOldest || id > first) && (S.foundNewest || id < last));
  const unknown = [];
  let dropped = 0;
  for (const m of ids.map((id) => S.byId.get(id)).filter(Boolean)) {
    const local = matchesLocally(m);
    if (local === false) {
      dropFromList(m);
      dropped++;
    } else if (local === null) {
      unknown.push(m.id);
    }
  }
  // More than the server checks at once: the narrow is read again.
  if (unknown.length + outside.length > MATCH_AT_ONCE) return showNarrow(narrow, { keepCompose: true, keepPlace: true });
  let matching = new Set();
  if (unknown.length || outside.length) {
    try {
      const r = await api("GET", "/messages/matches_narrow", { msg_ids: [...unknown, ...outside], narrow });
      matching = new Set(Object.keys(r.messages).map(Number));
    } catch {
      return;
    }
    if (narrow !== S.narrow) return;
    for (const id of unknown) {
      const m = S.byId.get(id);
      if (m && !matching.has(id)) {
        dropFromList(m);
        dropped++;
      }
    }
  }
  const incoming = outside.filter((id) => matching.has(id) && !S.byId.has(id));
  if (incoming.length && S.messages.length && incoming.every((id) => id > last)) {
    S.foundNewest = false;
    loadNewer();
  } else if (incoming.length || (dropped && !S.messages.length)) {
    // Refetched: what came in where it belongs, or (the list emptied)
    // what the narrow still holds.
    showNarrow(narrow, { keepCompose: true, keepPlace: true });
  }
}

function onDelete(ids) {
  for (const id of ids) {
    S.unread.delete(id);
    const m = S.byId.get(id);
    if (m) dropFromList(m);
  }
  renderSidebar();
}

function onReaction(event) {
  const m = S.byId.get(event.message_id);
  if (!m) return;
  const same = (r) => r.emoji_code === event.emoji_code && r.reaction_type === event.reaction_type && (r.user_id ?? r.user?.id) === event.user_id;
  if (event.op === "add") {
    if (!m.reactions.some(same)) m.reactions.push({ emoji_name: event.emoji_name, emoji_code: event.emoji_code, reaction_type: event.reaction_type, user_id: event.user_id });
  } else {
    m.reactions = m.reactions.filter((r) => !same(r));
  }
  renderReactions(m, m.el, view());
}

function onFlags(event) {
  if (event.flag !== "read") return;
  const ids = event.all ? [...S.unread.keys()] : event.messages;
  for (const id of ids) {
    if (event.op === "add") {
      S.unread.delete(id);
      S.byId.get(id)?.el.classList.remove("unread");
    } else {
      const m = S.byId.get(id);
      const details = event.message_details?.[id];
      if (m) S.unread.set(id, keyOf(m));
      else if (details?.type === "stream") S.unread.set(id, channelKey(details.stream_id, details.topic));
      else if (details) S.unread.set(id, dmKey(details.user_ids || []));
    }
  }
  renderSidebar();
}

// Someone else's typing: shown until their "stop", their message, or
// the server's expiry period without a new "start".
function onTyping(event) {
  const id = event.sender.user_id;
  if (id === S.me.user_id) return;
  clearTimeout(S.typing.get(id)?.timer);
  S.typing.delete(id);
  if (event.op === "start") {
    const key = event.message_type === "stream"
      ? channelKey(event.stream_id, event.topic)
      : dmKey(event.recipients.map((r) => r.user_id));
    const timer = setTimeout(() => { S.typing.delete(id); renderTyping(); }, S.typingExpiryMs);
    S.typing.set(id, { timer, key });
  }
  renderTyping();
}

function typingEnded(id) {
  if (!S.typing.has(id)) return;
  clearTimeout(S.typing.get(id).timer);
  S.typing.delete(id);
  renderTyping();
}

// Whether the conversation `key` is the one shown (every conversation
// for "All messages").
function shownConversation(key) {
  if (!S.narrow.length) return true;
  const dm = S.narrow.find((t) => t.operator === "dm");
  if (dm) return key === dmKey(String(dm.operand).split(",").map((e) => userIdOf(e.trim())).filter(Boolean));
  const channel = narrowChannelId();
  if (channel === null) return false;
  const topic = S.narrow.find((t) => t.operator === "topic");
  return topic ? key === channelKey(channel, topic.operand) : key.startsWith(`s:${channel}:`);
}

function userIdOf(email) {
  const lower = email.toLowerCase();
  return [...S.users.values()].find((u) => u.email.toLowerCase() === lower)?.user_id;
}

function renderTyping() {
  const el = $("#typing");
  if (!el) return;
  const names = [...S.typing.entries()].filter(([, t]) => shownConversation(t.key)).map(([id]) => userName(id));
  el.textContent = names.length ? `${names.join(", ")} ${names.length > 1 ? "are" : "is"} typing…` : "";
}

// ---- Read as seen ----

let toMark = new Set();
let markTimer = null;
const seen = new IntersectionObserver((entries) => {
  if (document.visibilityState !== "visible") return;
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    const id = Number(entry.target.dataset.id);
    seen.unobserve(entry.target);
    if (!S.unread.has(id)) continue;
    toMark.add(id);
  }
  if (toMark.size && !markTimer) markTimer = setTimeout(flushRead, 400);
}, { threshold: 0.5 });

async function flushRead() {
  markTimer = null;
  const ids = [...toMark];
  toMark = new Set();
  for (const id of ids) {
    S.unread.delete(id);
    S.byId.get(id)?.el.classList.remove("unread");
  }
  renderSidebar();
  try {
    await api("POST", "/messages/flags", { messages: ids, op: "add", flag: "read" });
  } catch {
    // Left unread on the server: the next register shows them again.
  }
}

// ---- Reactions and the emoji picker ----

async function react(m, name, add) {
  try {
    await api(add ? "POST" : "DELETE", `/messages/${m.id}/reactions`, { emoji_name: name });
  } catch (e) {
    setStatus(e.message);
  }
}

async function emojiList() {
  if (!S.emoji) {
    const r = await fetch("/static/generated/emoji/emoji_api.json").then((x) => x.json());
    S.emoji = Object.entries(r.code_to_names).flatMap(([code, names]) => names.map((name) => ({ name, char: emojiChar(code) ?? "?" })));
  }
  const custom = Object.values(S.realmEmoji).filter((e) => !e.deactivated).map((e) => ({ name: e.name, url: e.source_url }));
  return custom.concat(S.emoji);
}

async function openPicker(m, anchor) {
  closePicker();
  const all = await emojiList();
  const grid = h("div", { class: "grid", role: "listbox", "aria-label": "Emoji" });
  const fill = (filter) => {
    const f = filter.trim().toLowerCase();
    grid.replaceChildren(...all.filter((e) => !f || e.name.includes(f)).slice(0, 80).map((e) =>
      h("button", { type: "button", role: "option", title: e.name, "aria-label": e.name, dataset: { name: e.name },
        onclick: () => { closePicker(); react(m, e.name, true); } },
      e.url ? h("img", { src: e.url, alt: e.name, class: "emoji" }) : e.char)));
  };
  const search = h("input", { id: "emoji-search", type: "search", autocomplete: "off", oninput: () => fill(search.value) });
  const picker = h("div", { id: "emoji-picker", role: "dialog", "aria-label": "Choose an emoji" },
    h("label", { for: "emoji-search" }, "Find an emoji"), search, grid);
  fill("");
  const row = anchor.closest(".msg");
  row.append(picker);
  // Its block unclipped while it is open.
  row.closest(".block")?.classList.add("open");
  search.focus();
}

function closePicker() {
  const picker = $("#emoji-picker");
  picker?.closest(".block")?.classList.remove("open");
  picker?.remove();
}

// ---- Edit and delete ----

async function startEdit(m) {
  if (m.el.querySelector(".edit-form")) return;
  let raw;
  try {
    raw = (await api("GET", `/messages/${m.id}`, { apply_markdown: false })).raw_content;
  } catch (e) {
    return setStatus(e.message);
  }
  const text = h("textarea", { id: `edit-${m.id}`, rows: 3, value: raw });
  const form = h("form", { class: "edit-form", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      await api("PATCH", `/messages/${m.id}`, { content: text.value });
      endEdit(m);
    } catch (e) {
      setStatus(e.message);
    }
  } },
  h("label", { for: `edit-${m.id}` }, "Edit message"), text,
  h("button", { type: "submit" }, "Save"), h("button", { type: "button", onclick: () => endEdit(m) }, "Cancel"));
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  m.el.querySelector(".content").hidden = true;
  m.el.querySelector(".content").after(form);
  text.focus();
}

function endEdit(m) {
  m.el.querySelector(".edit-form")?.remove();
  m.el.querySelector(".content").hidden = false;
}

function confirmDelete(m, button) {
  if (button.dataset.confirm) {
    api("DELETE", `/messages/${m.id}`).catch((e) => setStatus(e.message));
    return;
  }
  button.dataset.confirm = "1";
  button.textContent = "Confirm delete";
  setTimeout(() => { delete button.dataset.confirm; button.textContent = "Delete"; }, 5000);
}

// ---- Compose ----

function composeForm() {
  const to = h("select", { id: "compose-to", onchange: recipientChanged });
  const topic = h("input", { id: "compose-topic", autocomplete: "off", maxlength: 60, oninput: composeChanged });
  const dm = h("input", {
    id: "compose-dm", autocomplete: "off", placeholder: "Type a name", role: "combobox",
    "aria-autocomplete": "list", "aria-controls": "dm-options", "aria-expanded": "false",
    oninput: () => showPeopleOptions(dm.value), onkeydown: pickerKey, onblur: () => setTimeout(closePeopleOptions, 150),
  });
  const text = h("textarea", { id: "compose-text", rows: 3, placeholder: "Message (Enter sends, Shift+Enter for a new line)" });
  const file = h("input", { id: "compose-file", type: "file", multiple: true, class: "visually-hidden", onchange: () => { for (const f of file.files) attach(f); file.value = ""; } });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $("#compose").requestSubmit();
    }
  });
  text.addEventListener("input", composeChanged);
  text.addEventListener("paste", (ev) => {
    const files = [...(ev.clipboardData?.files || [])];
    if (files.length) {
      ev.preventDefault();
      files.forEach(attach);
    }
  });
  const form = h("form", { id: "compose", "aria-label": "Compose", onsubmit: (ev) => { ev.preventDefault(); sendMessage(); } },
    h("div", { class: "recipient-row" },
      h("label", { for: "compose-to" }, "To"), to,
      h("span", { class: "topic-field" }, h("label", { for: "compose-topic" }, "Topic"), topic),
      h("span", { class: "dm-field", hidden: true },
        h("label", { for: "compose-dm" }, "People"),
        h("span", { id: "dm-pills", class: "pills" }), dm,
        h("ul", { id: "dm-options", role: "listbox", "aria-label": "People", hidden: true }))),
    h("label", { for: "compose-text", class: "visually-hidden" }, "Message"), text,
    h("div", { id: "preview", class: "content preview", hidden: true, "aria-live": "polite" }),
    h("div", { class: "compose-actions" },
      h("button", { type: "button", id: "preview-toggle", onclick: () => togglePreview() }, "Preview"),
      h("label", { for: "compose-file", class: "button" }, "Attach"), file,
      h("button", { type: "submit", id: "send" }, "Send")));
  form.addEventListener("dragover", (ev) => { ev.preventDefault(); form.classList.add("drop"); });
  form.addEventListener("dragleave", () => form.classList.remove("drop"));
  form.addEventListener("drop", (ev) => {
    ev.preventDefault();
    form.classList.remove("drop");
    for (const f of ev.dataTransfer.files) attach(f);
  });
  queueMicrotask(fillRecipients);
  return form;
}

function fillRecipients() {
  const to = $("#compose-to");
  if (!to) return;
  const chosen = to.value;
  to.replaceChildren(
    ...[...S.subs.values()].sort((a, b) => a.name.localeCompare(b.name)).map((s) => h("option", { value: `s:${s.stream_id}` }, `#${s.name}`)),
    h("option", { value: "dm" }, "Direct message"));
  if (chosen) to.value = chosen;
  recipientChanged();
}

function recipientChanged() {
  const dm = $("#compose-to").value === "dm";
  $(".topic-field").hidden = dm;
  $(".dm-field").hidden = !dm;
  composeChanged();
}

// ---- The people picker (direct-message recipients) ----

function newDm() {
  $("#compose-to").value = "dm";
  setDmRecipients([]);
  recipientChanged();
  if (document.body.classList.contains("sidebar-open")) toggleSidebar();
  $("#compose-dm").focus();
}

function setDmRecipients(ids) {
  S.dmTo = [...new Set(ids)];
  renderPills();
}

function renderPills() {
  const pills = $("#dm-pills");
  if (!pills) return;
  pills.replaceChildren(...S.dmTo.map((id) => h("span", { class: "pill", dataset: { userId: id } }, userName(id),
    h("button", { type: "button", class: "icon", "aria-label": `Remove ${userName(id)}`,
      onclick: () => { setDmRecipients(S.dmTo.filter((x) => x !== id)); composeChanged(); $("#compose-dm").focus(); } }, "×"))));
}

// The realm's active people whose name or email matches `query` (each
// word a prefix of a word of the name, or the email's start), not yet
// picked.
function matchingPeople(query) {
  const words = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [];
  return [...S.users.values()]
    .filter((u) => u.is_active !== false && !S.dmTo.includes(u.user_id))
    .filter((u) => {
      const names = u.full_name.toLowerCase().split(/[\s,.'’-]+/);
      const email = u.email.toLowerCase();
      return words.every((w) => email.startsWith(w) || names.some((n) => n.startsWith(w)));
    })
    .sort((a, b) => a.full_name.localeCompare(b.full_name))
    .slice(0, 8);
}

function showPeopleOptions(query) {
  const list = $("#dm-options");
  const found = matchingPeople(query);
  list.replaceChildren(...found.map((u, i) => h("li", {
    id: `dm-option-${u.user_id}`, role: "option", "aria-selected": String(i === 0), dataset: { userId: u.user_id },
    onmousedown: (ev) => { ev.preventDefault(); pickPerson(u.user_id); },
  }, `${u.full_name} `, h("span", { class: "email" }, u.email))));
  list.hidden = !found.length;
  if (!found.length && query.trim()) {
    list.replaceChildren(h("li", { class: "empty", role: "option", "aria-disabled": "true" }, "Nobody matches"));
    list.hidden = false;
  }
  $("#compose-dm").setAttribute("aria-expanded", String(!list.hidden));
}

function closePeopleOptions() {
  const list = $("#dm-options");
  if (!list) return;
  list.hidden = true;
  $("#compose-dm").setAttribute("aria-expanded", "false");
}

function pickPerson(id) {
  setDmRecipients([...S.dmTo, id]);
  const input = $("#compose-dm");
  input.value = "";
  closePeopleOptions();
  input.focus();
  composeChanged();
}

function pickerKey(ev) {
  const list = $("#dm-options");
  const options = [...list.querySelectorAll("[role=option][data-user-id]")];
  const at = options.findIndex((o) => o.getAttribute("aria-selected") === "true");
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    if (!options.length) return;
    const next = (at + (ev.key === "ArrowDown" ? 1 : options.length - 1)) % options.length;
    options.forEach((o, i) => o.setAttribute("aria-selected", String(i === next)));
  } else if (ev.key === "Enter") {
    ev.preventDefault();
    if (!list.hidden && at >= 0) pickPerson(Number(options[at].dataset.userId));
    else $("#compose-text").focus();
  } else if (ev.key === "Escape" && !list.hidden) {
    ev.stopPropagation();
    closePeopleOptions();
  } else if (ev.key === "Backspace" && !ev.target.value && S.dmTo.length) {
    setDmRecipients(S.dmTo.slice(0, -1));
    composeChanged();
  }
}

function prefillCompose(narrow) {
  fillRecipients();
  const channel = narrowChannelId();
  const topic = narrow.find((t) => t.operator === "topic");
  const dm = narrow.find((t) => t.operator === "dm");
  if (channel) {
    $("#compose-to").value = `s:${channel}`;
    $("#compose-topic").value = topic ? topic.operand : $("#compose-topic").value;
  } else if (dm) {
    $("#compose-to").value = "dm";
    setDmRecipients(String(dm.operand).split(",").map((e) => userIdOf(e.trim())).filter(Boolean));
  }
  recipientChanged();
}

function target() {
  const to = $("#compose-to").value;
  if (to === "dm") return { type: "direct", to: S.dmTo, ids: S.dmTo };
  const streamId = Number(to.slice(2));
  return { type: "stream", to: streamId, topic: $("#compose-topic").value.trim(), streamId };
}

// ---- Typing notices, by Zulip's timing rules ----

const TYPING_START_EVERY_MS = 10_000;
const TYPING_IDLE_MS = 5_000;
const typingOut = { key: null, params: null, lastStart: 0, idle: null };

// The conversation the compose box is addressed to, as `/typing` names
// it; null when there is none yet.
function typingTarget() {
  if (!$("#compose-to")?.value) return null;
  const t = target();
  if (t.type === "stream") return t.topic && t.streamId ? { type: "stream", stream_id: t.streamId, topic: t.topic } : null;
  return t.ids.length ? { type: "direct", to: t.ids } : null;
}

// After every change to the message, its topic or its recipients: a
// "start" for a new conversation or every ten seconds of typing, a "stop"
// after five idle seconds, on emptying the box or changing recipient.
function composeChanged() {
  const text = $("#compose-text");
  const params = text && text.value.trim() ? typingTarget() : null;
  const key = params && JSON.stringify(params);
  if (typingOut.key && typingOut.key !== key) stopTyping();
  if (!params) return;
  const now = Date.now();
  if (typingOut.key !== key || now - typingOut.lastStart >= TYPING_START_EVERY_MS) {
    Object.assign(typingOut, { key, params, lastStart: now });
    api("POST", "/typing", { op: "start", ...params }).catch(() => {});
  }
  clearTimeout(typingOut.idle);
  typingOut.idle = setTimeout(stopTyping, TYPING_IDLE_MS);
}

function stopTyping() {
  clearTimeout(typingOut.idle);
  if (!typingOut.key) return;
  const params = typingOut.params;
  Object.assign(typingOut, { key: null, params: null, lastStart: 0, idle: null });
  api("POST", "/typing", { op: "stop", ...params }).catch(() => {});
}

async function sendMessage() {
  const text = $("#compose-text");
  const content = text.value;
  if (!content.trim()) return;
  const t = target();
  const localId = String(++S.localId);
  const echo = h("li", { class: "msg pending", dataset: { localId } },
    h("div", { class: "msg-head" }, h("span", { class: "sender" }, S.me.full_name), h("span", { class: "recipient" }, "sending…")),
    h("div", { class: "content" }, h("p", {}, content)));
  S.pending.set(localId, echo);
  $("#outbox").append(echo);
  scrollToBottom();
  stopTyping();
  text.value = "";
  togglePreview(false);
  const params = { type: t.type, to: t.type === "stream" ? t.to : t.to, content, local_id: localId, queue_id: S.queueId };
  if (t.type === "stream") params.topic = t.topic;
  try {
    await api("POST", "/messages", params);
  } catch (e) {
    S.pending.delete(localId);
    echo.classList.add("failed");
    echo.querySelector(".recipient").textContent = `not sent: ${e.message}`;
    if (!text.value) text.value = content;
    setTimeout(() => echo.remove(), 8000);
  }
}

async function togglePreview(show) {
  const preview = $("#preview");
  show = show ?? preview.hidden;
  preview.hidden = !show;
  $("#preview-toggle").textContent = show ? "Edit" : "Preview";
  if (!show) return;
  preview.textContent = "…";
  try {
    const r = await api("POST", "/messages/render", { content: $("#compose-text").value });
    setRendered(preview, r.rendered);
  } catch (e) {
    preview.textContent = e.message;
  }
}

// Uploads a dropped, pasted or chosen file. As Zulip's web app does, a
// placeholder goes in at the cursor at once and becomes the file's link,
// `[name](/user_uploads/…)`, when the upload is done.
async function attach(file) {
  const text = $("#compose-text");
  const name = (file.name || "pasted_image.png").replace(/[[\]]/g, "");
  const placeholder = `[Uploading ${name}…]()`;
  insertAtCursor(text, placeholder);
  setStatus(`Uploading ${name}…`);
  let link = "";
  try {
    const r = await upload(file);
    link = `[${name}](${r.url ?? r.uri})`;
    setStatus("");
  } catch (e) {
    setStatus(`Upload failed: ${e.message}`);
  }
  const at = text.value.indexOf(placeholder);
  if (at >= 0) text.value = text.value.slice(0, at) + link + text.value.slice(at + placeholder.length);
  else if (link) insertAtCursor(text, link);
}

function insertAtCursor(text, insert) {
  const start = text.selectionStart ?? text.value.length;
  const end = text.selectionEnd ?? start;
  const before = text.value.slice(0, start);
  const space = before && !/\s$/.test(before) ? " " : "";
  text.value = before + space + insert + text.value.slice(end);
  const caret = before.length + space.length + insert.length;
  text.setSelectionRange(caret, caret);
}

start();
