// A browser benchmark of the web client (not a test: it asserts nothing,
// it prints figures). Starts `natter --dev --fsync never` on a fresh data
// dir, grows the realm to $BENCH_USERS accounts (default 10,000) and a
// channel topic of $BENCH_MESSAGES messages (default 1,000), then in
// Debian's chromium measures:
//
// - first load: bytes on the wire (compressed) of the page and its files,
//   and separately of the API replies of the first screen;
// - time to a usable list: navigation start to the first message shown
//   (signed in already, so register and GET /messages included);
// - render of 1,000 messages: the client's own list code (render.js)
//   building the entries from the server's rendered HTML and putting
//   them in the list, then a forced layout; median, lowest and highest
//   of $BENCH_RENDERS (7) on one page;
// - live latency: from the reply to a send through the API (another
//   account) to the message shown in the tab, median of $BENCH_LIVE (20).
//
// Run on a quiet machine, with a release build:
//   cargo build --release && (cd tests/web && npm ci && \
//     NATTER_BIN=target/release/natter node bench.mjs)

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const USERS = Number(process.env.BENCH_USERS || 10000);
const MESSAGES = Number(process.env.BENCH_MESSAGES || 1000);
const LIVE = Number(process.env.BENCH_LIVE || 20);
const RENDERS = Number(process.env.BENCH_RENDERS || 7);
const bin = path.resolve(REPO, process.env.NATTER_BIN || 'target/debug/natter');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'natter-web-bench-'));
const proc = spawn(bin, ['--dev', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data'), '--fsync', 'never', '--rate-limit', 'off'], { stdio: ['ignore', 'pipe', 'inherit'] });
const site = await new Promise((resolve) => {
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    const m = line.match(/^natter: listening on (http:\/\/\S+)$/);
    if (m) resolve(m[1]);
  });
});

const keys = {};
async function key(email) {
  const r = await fetch(`${site}/api/v1/dev_fetch_api_key`, { method: 'POST', body: new URLSearchParams({ username: email }) });
  return (keys[email] = (await r.json()).api_key);
}
async function api(email, method, route, params) {
  const auth = 'Basic ' + Buffer.from(`${email}:${keys[email] || (await key(email))}`).toString('base64');
  const r = await fetch(`${site}/api/v1${route}`, { method, headers: { Authorization: auth }, body: new URLSearchParams(params) });
  const json = await r.json();
  if (json.result !== 'success') throw new Error(`${route}: ${JSON.stringify(json)}`);
  return json;
}

// Sixteen requests in flight at a time.
async function inParallel(count, make) {
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) await make(next++);
  }));
}

let t = performance.now();
await inParallel(USERS, (i) => api('iago@natter.test', 'POST', '/users', { email: `bench${i}@natter.test`, full_name: `Bench User ${i}`, password: 'bench-password' }));
await inParallel(MESSAGES, (i) => api('othello@natter.test', 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'bench', content: `message **${i}** with \`code\` and a :smile:` }));
console.log(`setup: ${USERS} users, ${MESSAGES} messages in ${((performance.now() - t) / 1000).toFixed(1)} s`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
const page = await context.newPage();

// Sign in outside the measurement (the cookie lands in the context).
await context.request.post(`${site}/login`, { form: { username: 'hamlet@natter.test' }, headers: { Origin: site } });

const sizes = { files: 0, api: 0 };
page.on('requestfinished', async (request) => {
  const s = await request.sizes();
  const bytes = s.responseBodySize + s.responseHeadersSize;
  if (new URL(request.url()).pathname.startsWith('/api/')) sizes.api += bytes;
  else sizes.files += bytes;
});
await page.goto(`${site}/#narrow/${encodeURIComponent('channel:Denmark topic:bench')}`);
await page.locator('#messages .msg').first().waitFor({ timeout: 60000 });
const usable = await page.evaluate(() => performance.now());
await page.waitForLoadState('networkidle').catch(() => {});
console.log(`first load: ${(sizes.files / 1024).toFixed(1)} KiB of page and files, ${(sizes.api / 1024).toFixed(1)} KiB of API replies`);
console.log(`usable list: ${usable.toFixed(0)} ms from navigation (${USERS} extra users)`);

// The client's own path (render.js `insertRows`): the entries built and
// put in their blocks, then a forced layout; RENDERS times on one page,
// the list emptied and a frame let pass between.
const render = await page.evaluate(async ({ count, runs }) => {
  const src = document.querySelector('script[type=module]').src;
  const { insertRows } = await import(src.replace('app.js', 'render.js'));
  const { mayEdit, mayDelete } = await import(src.replace('app.js', 'rules.js'));
  const query = new URLSearchParams({ anchor: 'newest', num_before: String(count), num_after: '0', narrow: JSON.stringify([{ operator: 'channel', operand: 'Denmark' }]) });
  const { messages } = await (await fetch(`/api/v1/messages?${query}`)).json();
  const me = (await (await fetch('/api/v1/users/me')).json()).user_id;
  // Zulip's defaults: editing allowed without a time limit, deleting
  // one's own messages allowed.
  const rules = {
    me,
    realm: {
      allow_message_editing: true, message_content_edit_limit_seconds: 0, message_content_delete_limit_seconds: null,
      can_delete_any_message_group: { direct_members: [], direct_subgroups: [] },
      can_delete_own_message_group: { direct_members: [me], direct_subgroups: [] },
    },
    groups: new Map(),
    channels: new Map(),
  };
  const now = Date.now() / 1000;
  const may = (m) => ({ edit: mayEdit(rules, m, now), del: mayDelete(rules, m, now) });
  const view = { me, unread: new Map(), userName: String, realmEmoji: {}, may };
  const list = document.querySelector('#messages');
  const times = [];
  for (let run = 0; run < runs; run++) {
    list.replaceChildren(document.querySelector('#outbox'));
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 100)));
    const copies = messages.map((m) => ({ ...m }));
    const start = performance.now();
    insertRows(list, copies, 'end', view);
    void list.scrollHeight; // layout
    times.push(performance.now() - start);
  }
  return { times, count: messages.length };
}, { count: MESSAGES, runs: RENDERS });
const renders = [...render.times].sort((a, b) => a - b);
console.log(`render: ${render.count} messages in ${renders[Math.floor(renders.length / 2)].toFixed(1)} ms (median of ${RENDERS}; ${renders[0].toFixed(1)}–${renders[renders.length - 1].toFixed(1)} ms; each: ${render.times.map((x) => x.toFixed(1)).join(', ')})`);

await page.reload();
await page.locator('#messages .msg').first().waitFor({ timeout: 60000 });
const lags = [];
for (let i = 0; i < LIVE; i++) {
  const text = `live-${i}-${Date.now()}`;
  const seen = page.waitForFunction((x) => {
    const found = [...document.querySelectorAll('#messages .msg .content')].some((el) => el.textContent.includes(x));
    return found ? Date.now() : false;
  }, text, { polling: 'raf', timeout: 30000 });
  await api('othello@natter.test', 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'bench', content: text });
  const replied = Date.now();
  const shown = await (await seen).jsonValue();
  lags.push(shown - replied);
}
lags.sort((a, b) => a - b);
console.log(`live: median ${lags[Math.floor(lags.length / 2)]} ms, worst ${lags[lags.length - 1]} ms after the send's reply (${LIVE} sends)`);

await browser.close();
proc.kill('SIGTERM');
await new Promise((resolve) => proc.on('exit', resolve));
fs.rmSync(dir, { recursive: true, force: true });
