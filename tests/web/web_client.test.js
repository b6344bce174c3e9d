// The web client end to end: Debian's Chromium (/usr/bin/chromium),
// driven by playwright-core, against a freshly started `natter --dev`.
// One signed-in tab goes through a person's day — sign in, send, receive
// live, edit, react, delete, read, search, upload by drag and drop and by
// paste, start a direct message with the people picker, see a person
// deactivated and reactivated leave it and come back, survive a server
// restart without a reload, meet hostile markup as text, open a spoiler,
// see emoji, sign out — while other accounts act through the API with
// HTTP Basic. Typing notices, presence and network loss each get their
// own browser contexts (two people, or one tab whose network the test
// cuts), with playwright's fake clock so that timing rules are checked
// without waiting for them.
//
// Screenshots of the main views go to $WEB_ARTIFACTS (default
// tests/web/artifacts). The server binary is $NATTER_BIN if set, else
// <repo>/target/debug/natter.
// Run:  cargo build && (cd tests/web && npm ci && npm test)

'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { chromium } = require('playwright-core');

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const ARTIFACTS = process.env.WEB_ARTIFACTS || path.join(__dirname, 'artifacts');
const HAMLET = 'hamlet@natter.test';
const OTHELLO = 'othello@natter.test';
const IAGO = 'iago@natter.test'; // an administrator
const STARTUP_MS = 60000;
const WAIT = { timeout: 30000 };

let server; // { proc, site, dir, stderr, port }
let browser;
let context;
let page;
const dialogs = [];
const keys = {};

function natterBin() {
  const env = process.env.NATTER_BIN;
  const bin = env ? path.resolve(REPO_ROOT, env) : path.join(REPO_ROOT, 'target', 'debug', 'natter');
  if (!fs.existsSync(bin)) throw new Error(`natter binary not found at ${bin}: run \`cargo build\` first`);
  return bin;
}

// Starts natter on `dir` (a new temp dir if absent) and `listen`.
function startServer(dir, listen = '127.0.0.1:0') {
  dir = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'natter-web-'));
  const args = ['--dev', '--listen', listen, '--data-dir', path.join(dir, 'data'), '--workers', '2', '--rate-limit', 'off'];
  const proc = spawn(natterBin(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const state = { proc, dir, stderr: '' };
  proc.stderr.on('data', (chunk) => { state.stderr += chunk; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`natter did not start: ${state.stderr}`)), STARTUP_MS);
    proc.on('exit', (code) => reject(new Error(`natter exited (${code}): ${state.stderr}`)));
    readline.createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/^natter: listening on (http:\/\/\S+)$/);
      if (m) {
        clearTimeout(timer);
        state.site = m[1];
        state.port = Number(new URL(m[1]).port);
        resolve(state);
      }
    });
  });
}

function stopServer(signal = 'SIGKILL') {
  return new Promise((resolve) => {
    if (!server || server.proc.exitCode !== null) return resolve();
    server.proc.removeAllListeners('exit');
    server.proc.on('exit', resolve);
    server.proc.kill(signal);
  });
}

// An API call as `email` with HTTP Basic.
async function apiAs(email, method, route, params = {}) {
  const body = new URLSearchParams(params);
  const auth = 'Basic ' + Buffer.from(`${email}:${keys[email]}`).toString('base64');
  const url = `${server.site}/api/v1${route}` + (method === 'GET' ? `?${body}` : '');
  const r = await fetch(url, { method, headers: { Authorization: auth }, body: method === 'GET' ? undefined : body });
  const json = await r.json();
  assert.equal(json.result, 'success', `${method} ${route}: ${JSON.stringify(json)}`);
  return json;
}

async function shot(name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

// The message list entry (not a local echo) whose text includes `text`.
function message(text) {
  return page.locator('#messages .msg:not(.pending)', { hasText: text });
}

before(async () => {
  server = await startServer();
  for (const email of [HAMLET, OTHELLO, IAGO]) {
    const r = await fetch(`${server.site}/api/v1/dev_fetch_api_key`, { method: 'POST', body: new URLSearchParams({ username: email }) });
    keys[email] = (await r.json()).api_key;
  }
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  page = await context.newPage();
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => { dialogs.push(`page error: ${e.message}`); });
});

after(async () => {
  if (browser) await browser.close();
  await stopServer();
  if (server) fs.rmSync(server.dir, { recursive: true, force: true });
});

test('the page is served with its security headers', async () => {
  const r = await fetch(`${server.site}/`, { headers: { 'Accept-Encoding': 'gzip' } });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-security-policy'), /script-src 'self';/);
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
});

test('sign in with a development account', async () => {
  await page.goto(server.site + '/');
  await page.getByRole('button', { name: /King Hamlet|hamlet@natter\.test/ }).click();
  await page.locator('#compose-text').waitFor(WAIT);
  await page.locator('#channels li').first().waitFor(WAIT);
  await shot('signed-in');
  // The cookie is out of script's reach.
  assert.equal(await page.evaluate(() => document.cookie), '');
  const [cookie] = await context.cookies();
  assert.equal(cookie.name, 'natter_session');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
});

test('send a message and see it', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:web'));
  await page.locator('#compose-topic').fill('web');
  await page.locator('#compose-text').fill('hello from the browser');
  await page.locator('#compose-text').press('Enter');
  await message('hello from the browser').waitFor(WAIT);
  assert.equal(await page.locator('#compose-text').inputValue(), '');
  // Shift+Enter is a new line, not a send.
  await page.locator('#compose-text').press('Shift+Enter');
  assert.equal(await page.locator('#compose-text').inputValue(), '\n');
  await page.locator('#compose-text').fill('');
});

test('a message another user posts arrives live', async () => {
  await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'web', content: 'live from othello' });
  await message('live from othello').waitFor(WAIT);
});

test('edit, react to and delete a message', async () => {
  const mine = message('hello from the browser');
  await mine.hover();
  await mine.getByRole('button', { name: 'Edit' }).click();
  const editor = mine.locator('.edit-form textarea');
  await editor.fill('hello, edited');
  await editor.press('Enter');
  await message('hello, edited').locator('.edited').waitFor(WAIT);

  const edited = message('hello, edited');
  await edited.hover();
  await edited.getByRole('button', { name: 'Add reaction' }).click();
  await page.locator('#emoji-search').fill('octopus');
  await page.locator('#emoji-picker [role=option][data-name=octopus]').click();
  await edited.locator('.reaction[data-emoji=octopus]', { hasText: '1' }).waitFor(WAIT);
  await shot('reacted');
  // Clicking one's own reaction takes it back.
  await edited.locator('.reaction[data-emoji=octopus]').click();
  await edited.locator('.reaction').waitFor({ state: 'detached', ...WAIT });

  await edited.hover();
  await edited.getByRole('button', { name: 'Delete' }).click();
  await edited.getByRole('button', { name: 'Confirm delete' }).click();
  await message('hello, edited').waitFor({ state: 'detached', ...WAIT });
});

test('unread counts fall as messages are read', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:web'));
  await message('live from othello').waitFor(WAIT);
  const sent = [];
  for (let i = 0; i < 3; i++) {
    const r = await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'unread test', content: `unread number ${i}` });
    sent.push(r.id);
  }
  const generalBadge = page.locator('#channels li', { hasText: 'general' }).locator('> a .badge');
  await generalBadge.filter({ hasText: /^[3-9]|\d\d/ }).waitFor(WAIT);
  // The inbox lists the conversation with its count; it opens from there.
  await page.locator('#nav-inbox').click();
  const row = page.locator('#inbox a', { hasText: 'unread test' });
  await row.locator('.badge', { hasText: '3' }).waitFor(WAIT);
  await shot('inbox');
  await row.click();
  await message('unread number 2').waitFor(WAIT);
  // The topic's count in the sidebar goes, and the channel's falls.
  const topic = page.locator('#channels .topics a', { hasText: 'unread test' });
  await topic.waitFor(WAIT);
  await topic.locator('.badge').waitFor({ state: 'detached', ...WAIT });
  await page.waitForFunction(() => {
    const li = [...document.querySelectorAll('#channels > li')].find((l) => l.querySelector(':scope > a .name')?.textContent === 'general');
    const badge = li && li.querySelector(':scope > a .badge');
    return li && (!badge || Number(badge.textContent) < 3);
  }, null, WAIT);
  await page.locator('#nav-inbox').click();
  await page.locator('#inbox a', { hasText: 'unread test' }).waitFor({ state: 'detached', ...WAIT });
  await page.goBack();
  await shot('channel-read');
  // The server agrees: all three are read now.
  const r = await apiAs(HAMLET, 'GET', '/messages', { anchor: sent[0], num_before: 0, num_after: 2, narrow: JSON.stringify([{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: 'unread test' }]) });
  assert.equal(r.messages.length, 3);
  for (const m of r.messages) assert.ok(m.flags.includes('read'), JSON.stringify(m.flags));
});

test('search with the narrow syntax', async () => {
  await page.locator('#search').fill(`sender:${OTHELLO} number`);
  await page.locator('#search').press('Enter');
  await message('unread number 1').waitFor(WAIT);
  const texts = await page.locator('#messages .msg .content').allTextContents();
  assert.ok(texts.length >= 3, texts.join('|'));
  for (const t of texts) assert.match(t, /number/);
  assert.match(await page.locator('#narrow-title').textContent(), /sender:othello@natter\.test/);
  await shot('search');
});

test('markup in a message and a file named like HTML show as text', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:xss'));
  const hostile = '<script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2"> **bold**';
  await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'xss', content: hostile });
  // A file whose name is markup, uploaded and linked.
  const form = new FormData();
  form.append('file', new Blob(['<script>alert(1)</script>'], { type: 'text/html' }), '<img src=x onerror=alert(1)>.html');
  const auth = 'Basic ' + Buffer.from(`${OTHELLO}:${keys[OTHELLO]}`).toString('base64');
  const up = await (await fetch(`${server.site}/api/v1/user_uploads`, { method: 'POST', headers: { Authorization: auth }, body: form })).json();
  assert.equal(up.result, 'success', JSON.stringify(up));
  await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'xss', content: `[${up.filename || 'file'}](${up.url})` });
  const shown = message('window.__xss = 1');
  await shown.waitFor(WAIT);
  assert.match(await shown.locator('.content').textContent(), /<img src=x onerror="window.__xss = 2">/);
  assert.equal(await shown.locator('.content script, .content img').count(), 0);
  assert.equal(await shown.locator('.content strong').textContent(), 'bold');
  const link = page.locator('#messages .msg .content a', { hasText: 'onerror' });
  await link.waitFor(WAIT);
  assert.equal(await link.locator('img').count(), 0);
  // The compose preview renders on the server too.
  await page.locator('#compose-text').fill('<b>not bold</b> *but this*');
  await page.locator('#preview-toggle').click();
  await page.locator('#preview em', { hasText: 'but this' }).waitFor(WAIT);
  assert.equal(await page.locator('#preview b').count(), 0);
  await page.keyboard.press('Escape');
  await page.locator('#compose-text').fill('');
  // The file itself, opened directly, cannot run script either.
  const file = await context.request.get(server.site + up.url);
  assert.match(file.headers()['content-security-policy'], /sandbox/);
  assert.equal(file.status(), 200);
  assert.match(file.headers()['content-disposition'], /^attachment;/);
  assert.equal(file.headers()['x-content-type-options'], 'nosniff');
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.deepEqual(dialogs, []);
  await shot('hostile-markup');
});

test('spoilers stay closed until opened; emoji show as their characters', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:rendering'));
  await page.locator('#compose-topic').waitFor(WAIT);
  await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'rendering', content: '```spoiler Who did it\nthe butler did it\n```\n:octopus: and :flag_denmark:' });
  const shown = message('Who did it');
  await shown.waitFor(WAIT);
  const header = shown.locator('.spoiler-header');
  const content = shown.locator('.spoiler-content', { hasText: 'the butler did it' });
  assert.equal(await header.getAttribute('role'), 'button');
  assert.equal(await header.getAttribute('aria-expanded'), 'false');
  assert.equal(await content.isVisible(), false);
  await header.click();
  await content.waitFor(WAIT);
  assert.equal(await header.getAttribute('aria-expanded'), 'true');
  assert.equal(await content.getAttribute('aria-hidden'), 'false');
  await header.press('Enter');
  await content.waitFor({ state: 'hidden', ...WAIT });
  assert.equal(await content.getAttribute('aria-hidden'), 'true');
  assert.deepEqual(await shown.locator('.content span.emoji').evaluateAll((spans) => spans.map((e) => [e.textContent, e.getAttribute('aria-label')])),
    [['\u{1F419}', 'octopus'], ['\u{1F1E9}\u{1F1F0}', 'flag denmark']]);
});

test('older history loads on scroll', async () => {
  const ids = [];
  for (let i = 0; i < 120; i++) {
    ids.push((await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'history', content: `history number ${i}` })).id);
  }
  await apiAs(HAMLET, 'POST', '/messages/flags', { messages: JSON.stringify(ids), op: 'add', flag: 'read' });
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:history'));
  await message('history number 119').waitFor(WAIT);
  assert.equal(await message('history number 0').count(), 0, 'only the newest page at first');
  // Scrolling up fetches older pages until the first message, the entry
  // at the top staying where it was on the screen.
  while ((await message('history number 0').count()) === 0) {
    const shown = await page.locator('#messages .msg').count();
    const top = await page.locator('#messages').evaluate((list) => {
      list.scrollTop = 0;
      const first = list.querySelector('.msg');
      const at = { id: first.dataset.id, y: first.getBoundingClientRect().top };
      list.dispatchEvent(new Event('scroll'));
      return at;
    });
    await page.waitForFunction((n) => document.querySelectorAll('#messages .msg').length > n, shown, WAIT);
    const y = await page.evaluate((id) => document.querySelector(`#messages .msg[data-id="${id}"]`).getBoundingClientRect().top, top.id);
    assert.ok(Math.abs(y - top.y) <= 1, `the top entry moved from ${top.y} to ${y}`);
  }
  await message('history number 0').waitFor(WAIT);
  assert.equal(await page.locator('#messages .msg', { hasText: 'history number' }).count(), 120);
});

test('a file dropped on the compose box is uploaded, linked and sent', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:files'));
  await page.locator('#compose-topic').fill('files');
  await page.evaluate(() => {
    const data = new DataTransfer();
    data.items.add(new File(['dropped bytes'], 'notes.txt', { type: 'text/plain' }));
    document.querySelector('#compose').dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
  });
  await page.waitForFunction(() => /\[notes\.txt\]\(\/user_uploads\//.test(document.querySelector('#compose-text').value), null, WAIT);
  await page.locator('#compose-text').press('Enter');
  const link = message('notes.txt').locator('.content a', { hasText: 'notes.txt' });
  await link.waitFor(WAIT);
  // The browser downloads it with its session cookie.
  const file = await context.request.get(server.site + (await link.getAttribute('href')));
  assert.equal(await file.text(), 'dropped bytes');
});

test('a server restart mid-session recovers without a reload', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:restart'));
  await page.locator('#compose-topic').waitFor(WAIT);
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.locator('#compose-text').fill('a draft that survives');
  const { dir, port } = server;
  await stopServer('SIGKILL');
  server = await startServer(dir, `127.0.0.1:${port}`);
  await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'restart', content: 'sent after the restart' });
  await message('sent after the restart').waitFor(WAIT);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  assert.equal(await page.locator('#compose-text').inputValue(), 'a draft that survives');
  // And the tab still sends with its (durable) session.
  await page.locator('#compose-text').press('Enter');
  await message('a draft that survives').waitFor(WAIT);
});

// A tiny PNG (1×1), as a screenshot pasted from the clipboard would be.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

test('an image pasted into the compose box is uploaded and linked at the cursor', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:paste'));
  await page.locator('#compose-topic').fill('paste');
  await page.locator('#compose-text').fill('look: ');
  // Text on the clipboard is left to the browser: no upload.
  const textPaste = await page.evaluate(() => {
    const data = new DataTransfer();
    data.setData('text/plain', 'plain words');
    const ev = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
    document.querySelector('#compose-text').dispatchEvent(ev);
    return ev.defaultPrevented;
  });
  assert.equal(textPaste, false);
  const imagePaste = await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
    const text = document.querySelector('#compose-text');
    text.setSelectionRange(text.value.length, text.value.length);
    const ev = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
    text.dispatchEvent(ev);
    return ev.defaultPrevented;
  }, PNG.toString('base64'));
  assert.equal(imagePaste, true);
  await page.waitForFunction(() => /^look: \[image\.png\]\(\/user_uploads\/[^)\s]+\.png\)$/.test(document.querySelector('#compose-text').value), null, WAIT);
  await page.locator('#compose-text').press('Enter');
  const link = message('look:').locator('.content a', { hasText: 'image.png' });
  await link.waitFor(WAIT);
  const file = await context.request.get(server.site + (await link.getAttribute('href')));
  assert.equal(file.status(), 200);
  assert.deepEqual(Buffer.from(await file.body()), PNG);
});

test('the people picker starts a direct message', async () => {
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:picker'));
  await page.locator('#compose-topic').waitFor(WAIT);
  await page.locator('#new-dm').click();
  assert.equal(await page.locator('#compose-to').inputValue(), 'dm');
  const input = page.locator('#compose-dm');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'compose-dm');
  await input.pressSequentially('zzz');
  await page.locator('#dm-options li', { hasText: 'Nobody matches' }).waitFor(WAIT);
  await input.fill('');
  // A word of the name, from the start of a word.
  await input.pressSequentially('oth');
  const options = page.locator('#dm-options [role=option][data-user-id]');
  await options.first().waitFor(WAIT);
  assert.deepEqual(await options.allTextContents(), [`Othello, the Moor of Venice ${OTHELLO}`]);
  await input.press('Enter');
  await page.locator('#dm-pills .pill', { hasText: 'Othello' }).waitFor(WAIT);
  assert.equal(await input.inputValue(), '');
  // Another, picked with the mouse; Backspace in the empty field takes it back.
  await input.pressSequentially('cord');
  await page.locator('#dm-options [role=option]', { hasText: 'Cordelia' }).click();
  await page.locator('#dm-pills .pill', { hasText: 'Cordelia' }).waitFor(WAIT);
  await input.press('Backspace');
  await page.locator('#dm-pills .pill', { hasText: 'Cordelia' }).waitFor({ state: 'detached', ...WAIT });
  // Someone picked is not offered again.
  await input.pressSequentially('oth');
  await page.locator('#dm-options li', { hasText: 'Nobody matches' }).waitFor(WAIT);
  await input.fill('');
  await page.locator('#compose-text').fill('hello through the picker');
  await page.locator('#compose-text').press('Enter');
  await page.locator('#dms a', { hasText: 'Othello' }).waitFor(WAIT);
  const r = await apiAs(OTHELLO, 'GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: 'dm', operand: HAMLET }]) });
  const [sent] = r.messages;
  assert.equal(sent.content.includes('hello through the picker'), true, sent.content);
  assert.deepEqual(sent.display_recipient.map((u) => u.email).sort(), [HAMLET, OTHELLO]);
});

test('a deactivated person leaves the people picker and the buddy list at once, and a reactivated one comes back', async () => {
  // Deactivated before the page loads.
  const { user_id: id } = await apiAs(IAGO, 'POST', '/users', { email: 'rosalind@natter.test', password: 'rosalind-password', full_name: 'Rosalind Ganymede' });
  await apiAs(IAGO, 'DELETE', `/users/${id}`);
  await page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:people'));
  await page.reload();
  await page.locator('#people li', { hasText: 'Othello' }).waitFor(WAIT);
  await page.evaluate(() => { window.__sameDocument = true; });
  const buddy = page.locator(`#people li[data-user-id="${id}"]`);
  const offered = page.locator(`#dm-options [role=option][data-user-id="${id}"]`);
  const nobody = page.locator('#dm-options li', { hasText: 'Nobody matches' });
  const input = page.locator('#compose-dm');
  assert.equal(await buddy.count(), 0);
  await page.locator('#new-dm').click();
  await input.pressSequentially('rosa');
  await nobody.waitFor(WAIT);

  // Reactivated: offered in the open picker and listed, without a reload.
  await apiAs(IAGO, 'POST', `/users/${id}/reactivate`);
  await offered.waitFor(WAIT);
  assert.deepEqual(await page.locator('#dm-options [role=option][data-user-id]').allTextContents(), ['Rosalind Ganymede rosalind@natter.test']);
  await buddy.filter({ hasText: 'Rosalind Ganymede' }).waitFor(WAIT);

  // Deactivated while the picker shows them: gone from both at once.
  await apiAs(IAGO, 'DELETE', `/users/${id}`);
  await offered.waitFor({ state: 'detached', ...WAIT });
  await nobody.waitFor(WAIT);
  await buddy.waitFor({ state: 'detached', ...WAIT });
  await input.fill('');
  await input.pressSequentially('ganymede');
  await nobody.waitFor(WAIT);

  // And back once more: someone this page saw go.
  await apiAs(IAGO, 'POST', `/users/${id}/reactivate`);
  await offered.waitFor(WAIT);
  await buddy.waitFor(WAIT);
  await input.press('Enter');
  await page.locator('#dm-pills .pill', { hasText: 'Rosalind' }).waitFor(WAIT);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload');
  await input.press('Backspace');
  await page.locator('#dm-pills .pill').waitFor({ state: 'detached', ...WAIT });
});

// A second browser context, signed in as `email`, with a fake clock
// (playwright's; paused on request) and a page whose visibility the test
// sets (`setVisibility`).
async function openAs(email, { visibility = 'visible' } = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  await ctx.clock.install();
  await ctx.addInitScript((initial) => {
    window.__visibility = initial;
    Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => window.__visibility });
    Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => window.__visibility !== 'visible' });
    // The ops of the page's typing notices, noted as they are sent.
    window.__typing = [];
    const realFetch = window.fetch;
    window.fetch = function (url, init) {
      if (String(url).startsWith('/api/v1/typing')) window.__typing.push(new URLSearchParams(String(init.body)).get('op'));
      return realFetch.apply(this, arguments);
    };
  }, visibility);
  const r = await ctx.request.post(`${server.site}/login`, { form: { username: email }, headers: { Origin: server.site } });
  assert.equal(r.status(), 200, await r.text());
  const p = await ctx.newPage();
  p.on('pageerror', (e) => { dialogs.push(`page error (${email}): ${e.message}`); });
  // The page's own API calls, in the order it made them.
  const calls = [];
  p.on('request', (req) => {
    const url = new URL(req.url());
    if (url.pathname.startsWith('/api/v1/')) {
      calls.push({ method: req.method(), path: url.pathname.slice(7), params: Object.fromEntries(new URLSearchParams(req.postData() || url.search)) });
    }
  });
  return { ctx, page: p, calls, clock: ctx.clock };
}

function setVisibility(p, state) {
  return p.evaluate((s) => { window.__visibility = s; document.dispatchEvent(new Event('visibilitychange')); }, state);
}

// Waits (bounded) until `check()` holds.
async function until(check, what) {
  const deadline = Date.now() + WAIT.timeout;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Pauses the page's clock where it is: timers fire only as the test
// moves it on.
async function pause(tab) {
  await tab.clock.pauseAt(await tab.page.evaluate(() => Date.now() + 500));
}

test('typing notices follow Zulip\'s timing and show on the other side', async () => {
  const watcher = await openAs(HAMLET);
  const typist = await openAs(OTHELLO);
  try {
    await watcher.page.goto(server.site + '/#narrow/' + encodeURIComponent(`dm:${OTHELLO}`));
    await typist.page.goto(server.site + '/#narrow/' + encodeURIComponent(`dm:${HAMLET}`));
    await watcher.page.locator('#compose-text').waitFor(WAIT);
    await typist.page.locator('#dm-pills .pill', { hasText: 'King Hamlet' }).waitFor(WAIT);
    await pause(typist);
    const typing = () => typist.page.evaluate(() => window.__typing);
    const shown = watcher.page.locator('#typing', { hasText: 'Othello, the Moor of Venice is typing…' });
    const text = typist.page.locator('#compose-text');

    await text.press('h');
    assert.deepEqual(await typing(), ['start']);
    await shown.waitFor(WAIT);
    await until(() => typist.calls.some((c) => c.path === '/typing'), 'the first start');
    const first = typist.calls.find((c) => c.path === '/typing').params;
    assert.equal(first.type, 'direct');
    assert.equal(first.to, JSON.stringify([(await apiAs(HAMLET, 'GET', '/users/me')).user_id]));
    // Typing on: no new "start" within ten seconds, one after.
    await typist.clock.fastForward(4000);
    await text.press('e');
    await typist.clock.fastForward(4000);
    await text.press('l');
    assert.deepEqual(await typing(), ['start']);
    await typist.clock.fastForward(2500);
    await text.press('l');
    assert.deepEqual(await typing(), ['start', 'start']);
    // Five idle seconds: "stop", and the notice goes.
    await typist.clock.fastForward(4900);
    assert.deepEqual(await typing(), ['start', 'start']);
    await typist.clock.fastForward(200);
    assert.deepEqual(await typing(), ['start', 'start', 'stop']);
    await shown.waitFor({ state: 'detached', ...WAIT });
    // Typing again starts again; sending stops.
    await text.press('o');
    await shown.waitFor(WAIT);
    await text.press('Enter');
    assert.deepEqual(await typing(), ['start', 'start', 'stop', 'start', 'stop']);
    await shown.waitFor({ state: 'detached', ...WAIT });
    await watcher.page.locator('#messages .msg:not(.pending) .content', { hasText: /^hello$/ }).waitFor(WAIT);
    // A "start" with no "stop" expires after the server's period.
    await pause(watcher);
    await apiAs(OTHELLO, 'POST', '/typing', { op: 'start', type: 'direct', to: first.to });
    await shown.waitFor(WAIT);
    await watcher.clock.fastForward(14_000);
    assert.equal(await shown.count(), 1);
    await watcher.clock.fastForward(1_100);
    await shown.waitFor({ state: 'detached', ...WAIT });
    // Typing in another conversation is not shown here.
    await apiAs(OTHELLO, 'POST', '/typing', { op: 'start', type: 'stream', stream_id: String((await apiAs(OTHELLO, 'GET', '/get_stream_id', { stream: 'Denmark' })).stream_id), topic: 'elsewhere' });
    await watcher.page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:elsewhere'));
    await shown.waitFor(WAIT);
    await watcher.page.goto(server.site + '/#narrow/' + encodeURIComponent(`dm:${OTHELLO}`));
    await watcher.page.locator('#compose-text').waitFor(WAIT);
    assert.equal(await shown.count(), 0);
  } finally {
    await watcher.ctx.close();
    await typist.ctx.close();
  }
});

test('presence: reported idle while hidden and active while shown, with dots in the buddy list', async () => {
  const watcher = await openAs(HAMLET);
  const other = await openAs('cordelia@natter.test', { visibility: 'hidden' });
  try {
    const reports = () => other.calls.filter((c) => c.path === '/users/me/presence').map((c) => c.params.status);
    await other.page.goto(server.site + '/');
    await until(() => reports().length === 1, 'the first report');
    await pause(other);
    assert.deepEqual(reports(), ['idle']);
    await watcher.page.goto(server.site + '/');
    const cordelia = (state) => watcher.page.locator(`#people li[data-presence=${state}]`, { hasText: 'Cordelia' });
    await cordelia('idle').locator('.dot.idle').waitFor(WAIT);
    // Shown: "active" at once, and again every minute.
    await setVisibility(other.page, 'visible');
    await until(() => reports().length === 2, 'the report on showing');
    await cordelia('active').locator('.dot.active').waitFor(WAIT);
    await other.clock.fastForward(59_000);
    assert.equal(reports().length, 2);
    await other.clock.fastForward(1_100);
    await until(() => reports().length === 3, 'the minute\'s report');
    // Hidden: "idle" at once (still shown active to others until the
    // active report ages past the offline threshold, as in Zulip).
    await setVisibility(other.page, 'hidden');
    await until(() => reports().length === 4, 'the report on hiding');
    assert.deepEqual(reports(), ['idle', 'active', 'active', 'idle']);
    for (const c of other.calls.filter((x) => x.path === '/users/me/presence')) {
      assert.equal(c.params.new_user_input, String(c.params.status === 'active'));
    }
    // Nobody reporting for longer than the threshold: offline.
    await pause(watcher);
    await watcher.clock.fastForward(200_000);
    await cordelia('offline').locator('.dot.offline').waitFor(WAIT);
    await watcher.page.locator('#people li[data-presence=offline]', { hasText: 'Othello' }).waitFor(WAIT);
  } finally {
    await watcher.ctx.close();
    await other.ctx.close();
  }
});

test('network loss: back-off with jitter, a reconnecting notice, resuming, and re-registering', async () => {
  const tab = await openAs(HAMLET);
  try {
    // Polls under way (sent, not yet answered): the cut below must find one.
    const underway = new Set();
    const isPoll = (r) => new URL(r.url()).pathname === '/api/v1/events' && r.method() === 'GET';
    tab.page.on('request', (r) => { if (isPoll(r)) underway.add(r); });
    for (const ended of ['requestfinished', 'requestfailed']) tab.page.on(ended, (r) => underway.delete(r));
    let queueId = null;
    tab.page.on('response', async (r) => {
      if (new URL(r.url()).pathname === '/api/v1/register') queueId = (await r.json()).queue_id;
    });
    await tab.page.goto(server.site + '/#narrow/' + encodeURIComponent('channel:Denmark topic:network'));
    await tab.page.locator('#compose-topic').fill('network');
    await tab.page.locator('#compose-text').fill('a draft kept offline');
    await until(() => queueId, 'the queue');
    await pause(tab);
    const shown = (text) => tab.page.locator('#messages .msg:not(.pending) .content', { hasText: text });
    const notice = tab.page.locator('#connection');
    const polls = () => tab.calls.filter((c) => c.path === '/events' && c.method === 'GET').length;
    const registers = () => tab.calls.filter((c) => c.path === '/register').length;
    const post = (content) => apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'network', content });

    // Cut off: the poll under way ends with a message, the next ones fail.
    // (A poll just answered starts the next on the page's paused clock.)
    for (let i = 0; underway.size === 0; i++) {
      assert.ok(i < 500, 'no poll under way');
      await tab.clock.runFor(1);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await tab.page.route((url) => url.pathname === '/api/v1/events', (route) => route.abort('internetdisconnected'));
    await post('before the cut');
    await shown('before the cut').waitFor(WAIT);
    const failed = (n) => tab.page.locator(`#connection[data-failures="${n}"]`);
    await failed(1).waitFor(WAIT);
    assert.match(await notice.textContent(), /Reconnecting in \d+ s/);
    const cap = 30_000;
    for (let n = 1; n <= 7; n++) {
      const scale = Math.min(1000 * 2 ** (n - 1), cap);
      const wait = Number(await failed(n).getAttribute('data-retry-ms'));
      assert.ok(wait >= scale / 2 && wait <= scale, `retry ${n}: ${wait} ms, not within [${scale / 2}, ${scale}]`);
      const before = polls();
      await tab.clock.fastForward(Math.max(0, wait - 50));
      assert.equal(polls(), before, `retry ${n} waited less than its delay`);
      await tab.clock.fastForward(60);
      if (n < 7) await failed(n + 1).waitFor(WAIT);
    }
    await until(() => polls() >= 9, 'the eighth poll');
    // That poll was sent; the network must have refused it before the
    // network comes back, or it would reach the server and succeed.
    await failed(8).waitFor(WAIT);
    // Back: the same queue resumes, with what was sent meanwhile.
    await post('while cut off');
    await tab.page.unroute((url) => url.pathname === '/api/v1/events');
    await tab.page.unrouteAll();
    const wait = Number(await failed(8).getAttribute('data-retry-ms'));
    assert.ok(wait >= cap / 2 && wait <= cap, `capped: ${wait}`);
    await tab.clock.fastForward(wait + 10);
    await shown('while cut off').waitFor(WAIT);
    await notice.waitFor({ state: 'hidden', ...WAIT });
    assert.equal(registers(), 1);

    // Cut off again, and the server forgets the queue meanwhile: the page
    // registers anew and refetches, keeping the draft.
    await tab.page.route((url) => url.pathname === '/api/v1/events', (route) => route.abort('internetdisconnected'));
    await post('before the second cut');
    await shown('before the second cut').waitFor(WAIT);
    await failed(1).waitFor(WAIT);
    await apiAs(HAMLET, 'DELETE', '/events', { queue_id: queueId });
    await post('after the queue went');
    await tab.page.unrouteAll();
    await tab.clock.fastForward(Number(await failed(1).getAttribute('data-retry-ms')) + 10);
    await until(() => registers() === 2, 'the second register');
    await shown('after the queue went').waitFor(WAIT);
    await notice.waitFor({ state: 'hidden', ...WAIT });
    assert.equal(await tab.page.locator('#compose-text').inputValue(), 'a draft kept offline');
    await post('live again');
    await shown('live again').waitFor(WAIT);
  } finally {
    await tab.ctx.close();
  }
});

// An API call as `email` whose refusal the test expects: the reply's JSON.
async function apiRefused(email, method, route, params = {}) {
  const auth = 'Basic ' + Buffer.from(`${email}:${keys[email]}`).toString('base64');
  const r = await fetch(`${server.site}/api/v1${route}`, { method, headers: { Authorization: auth }, body: new URLSearchParams(params) });
  const json = await r.json();
  assert.equal(json.result, 'error', `${method} ${route} was not refused`);
  return json;
}

function narrowUrl(text) {
  return server.site + '/#narrow/' + encodeURIComponent(text);
}

test('Edit and Delete are offered only within the realm\'s rules, and follow them as they change', async () => {
  // The settings as they were, put back at the end.
  const before = await apiAs(IAGO, 'POST', '/register', { fetch_event_types: JSON.stringify(['realm', 'realm_user_groups']) });
  const admins = before.realm_user_groups.find((g) => g.name === 'role:administrators').id;
  const realm = (params) => apiAs(IAGO, 'PATCH', '/realm', params);
  const denmark = (await apiAs(IAGO, 'GET', '/get_stream_id', { stream: 'Denmark' })).stream_id;
  const channelBefore = (await apiAs(IAGO, 'GET', `/streams/${denmark}`)).stream;
  const channel = (params) => apiAs(IAGO, 'PATCH', `/streams/${denmark}`, params);
  const tab = await openAs(HAMLET);
  const admin = await openAs(IAGO);
  try {
    const post = async (email, content) => (await apiAs(email, 'POST', '/messages', { type: 'stream', to: 'Denmark', topic: 'rules', content })).id;
    const mine = await post(HAMLET, 'mine under the rules');
    const theirs = await post(OTHELLO, 'othello under the rules');
    const row = (p, id) => p.locator(`#messages .msg[data-id="${id}"]`);
    const button = (p, id, name) => row(p, id).getByRole('button', { name, exact: true });
    const has = async (p, id, name) => (await button(p, id, name).count()) === 1;
    await tab.page.goto(narrowUrl('channel:Denmark topic:rules'));
    await row(tab.page, theirs).waitFor(WAIT);
    assert.deepEqual([await has(tab.page, mine, 'Edit'), await has(tab.page, mine, 'Delete')], [true, true]);
    assert.deepEqual([await has(tab.page, theirs, 'Edit'), await has(tab.page, theirs, 'Delete')], [false, false]);

    // An administrator turns editing off while the page is open: Edit
    // goes at once, Delete stays; the server refuses the edit too.
    await realm({ allow_message_editing: 'false' });
    await button(tab.page, mine, 'Edit').waitFor({ state: 'detached', ...WAIT });
    assert.equal(await has(tab.page, mine, 'Delete'), true);
    const refused = await apiRefused(HAMLET, 'PATCH', `/messages/${mine}`, { content: 'edited anyway' });
    assert.equal(refused.msg, 'Your organization has turned off message editing');
    await realm({ allow_message_editing: 'true' });
    await button(tab.page, mine, 'Edit').waitFor(WAIT);

    // Time limits: once the page's clock is past them, the entry's
    // buttons go when the pointer comes to it.
    await realm({ message_content_edit_limit_seconds: '600', message_content_delete_limit_seconds: '900' });
    await tab.clock.fastForward(700_000);
    await row(tab.page, theirs).hover();
    await row(tab.page, mine).hover();
    await button(tab.page, mine, 'Edit').waitFor({ state: 'detached', ...WAIT });
    assert.equal(await has(tab.page, mine, 'Delete'), true, 'within the delete limit');
    await tab.clock.fastForward(300_000);
    await row(tab.page, theirs).hover();
    await row(tab.page, mine).hover();
    await button(tab.page, mine, 'Delete').waitFor({ state: 'detached', ...WAIT });

    // Deleting one's own messages left to administrators (group
    // settings), in the channel (the realm still lets everyone) and then
    // in the realm: Delete goes when both have.
    await realm({ message_content_edit_limit_seconds: '"unlimited"', message_content_delete_limit_seconds: '"unlimited"' });
    await channel({ can_delete_own_message_group: JSON.stringify({ new: admins }) });
    const fresh = await post(HAMLET, 'fresh under the rules');
    await row(tab.page, fresh).waitFor(WAIT);
    assert.deepEqual([await has(tab.page, fresh, 'Edit'), await has(tab.page, fresh, 'Delete')], [true, true]);
    await realm({ can_delete_own_message_group: JSON.stringify({ new: admins }) });
    await button(tab.page, fresh, 'Delete').waitFor({ state: 'detached', ...WAIT });
    assert.equal(await has(tab.page, fresh, 'Edit'), true);
    await apiRefused(HAMLET, 'DELETE', `/messages/${fresh}`);

    // An administrator deletes anyone's message (and edits only their own).
    await admin.page.goto(narrowUrl('channel:Denmark topic:rules'));
    await row(admin.page, fresh).waitFor(WAIT);
    assert.deepEqual([await has(admin.page, theirs, 'Edit'), await has(admin.page, theirs, 'Delete')], [false, true]);
    assert.deepEqual([await has(admin.page, fresh, 'Edit'), await has(admin.page, fresh, 'Delete')], [false, true]);
    await row(admin.page, theirs).hover();
    await button(admin.page, theirs, 'Delete').click();
    await button(admin.page, theirs, 'Confirm delete').click();
    await row(admin.page, theirs).waitFor({ state: 'detached', ...WAIT });
    await row(tab.page, theirs).waitFor({ state: 'detached', ...WAIT });
  } finally {
    await realm({
      allow_message_editing: JSON.stringify(before.realm_allow_message_editing),
      message_content_edit_limit_seconds: JSON.stringify(before.realm_message_content_edit_limit_seconds || 'unlimited'),
      message_content_delete_limit_seconds: JSON.stringify(before.realm_message_content_delete_limit_seconds ?? 'unlimited'),
      can_delete_own_message_group: JSON.stringify({ new: before.realm_can_delete_own_message_group }),
    });
    await channel({ can_delete_own_message_group: JSON.stringify({ new: channelBefore.can_delete_own_message_group }) });
    await tab.ctx.close();
    await admin.ctx.close();
  }
});

test('messages moved out of the topic shown leave the list, their unread counts move, and messages moved in appear', async () => {
  const post = async (topic, content, to = 'Denmark') => (await apiAs(OTHELLO, 'POST', '/messages', { type: 'stream', to, topic, content })).id;
  const move = (id, params) => apiAs(OTHELLO, 'PATCH', `/messages/${id}`, { send_notification_to_old_thread: 'false', send_notification_to_new_thread: 'false', ...params });
  const general = (await apiAs(OTHELLO, 'GET', '/get_stream_id', { stream: 'general' })).stream_id;
  const denmark = (await apiAs(OTHELLO, 'GET', '/get_stream_id', { stream: 'Denmark' })).stream_id;
  // Shown (read): three in "leaving"; not shown (unread): two in "unread move".
  const leaving = [await post('leaving', 'leaving one'), await post('leaving', 'leaving two'), await post('leaving', 'leaving three')];
  await apiAs(HAMLET, 'POST', '/messages/flags', { messages: JSON.stringify(leaving), op: 'add', flag: 'read' });
  const unread = [await post('unread move', 'unread move one'), await post('unread move', 'unread move two')];
  const tab = await openAs(HAMLET);
  try {
    const ids = () => tab.page.locator('#messages .msg:not(.pending)').evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)));
    const badge = (name) => tab.page.evaluate((n) => {
      const li = [...document.querySelectorAll('#channels > li')].find((l) => l.querySelector(':scope > a .name')?.textContent === n);
      return Number(li?.querySelector(':scope > a .badge')?.textContent || 0);
    }, name);
    await tab.page.goto(narrowUrl('channel:Denmark topic:leaving'));
    await tab.page.locator(`#messages .msg[data-id="${leaving[2]}"]`).waitFor(WAIT);
    const topicBadge = tab.page.locator('#channels .topics a', { hasText: 'unread move' }).locator('.badge', { hasText: '2' });
    await topicBadge.waitFor(WAIT);
    const [denmarkBefore, generalBefore] = [await badge('Denmark'), await badge('general')];
    assert.ok(denmarkBefore >= 2, `Denmark: ${denmarkBefore}`);

    // One message to another topic: it leaves; the others stay.
    await move(leaving[1], { topic: 'left', propagate_mode: 'change_one' });
    await tab.page.locator(`#messages .msg[data-id="${leaving[1]}"]`).waitFor({ state: 'detached', ...WAIT });
    assert.deepEqual(await ids(), [leaving[0], leaving[2]]);
    // From the last one on, to another channel: it leaves too.
    await move(leaving[2], { stream_id: String(general), propagate_mode: 'change_later' });
    await tab.page.locator(`#messages .msg[data-id="${leaving[2]}"]`).waitFor({ state: 'detached', ...WAIT });
    assert.deepEqual(await ids(), [leaving[0]]);
    // The last one: the topic shown is empty now.
    await move(leaving[0], { topic: 'left', propagate_mode: 'change_one' });
    await tab.page.locator('#messages .empty', { hasText: 'No messages here yet.' }).waitFor(WAIT);
    assert.deepEqual(await ids(), []);

    // Unread messages not shown, moved to another channel: their counts
    // go with them.
    await move(unread[0], { stream_id: String(general), topic: 'unread moved', propagate_mode: 'change_all' });
    await topicBadge.waitFor({ state: 'detached', ...WAIT });
    await tab.page.waitForFunction(([d, g]) => {
      const count = (n) => {
        const li = [...document.querySelectorAll('#channels > li')].find((l) => l.querySelector(':scope > a .name')?.textContent === n);
        return Number(li?.querySelector(':scope > a .badge')?.textContent || 0);
      };
      return count('Denmark') === d && count('general') === g;
    }, [denmarkBefore - 2, generalBefore + 2], WAIT);

    // Moved in: a whole topic whose messages interleave with those shown
    // comes in, in order; a later message from another channel comes in
    // at the end.
    const arrivals = [await post('incoming', 'incoming one'), await post('arrivals', 'arrivals one'), await post('incoming', 'incoming two'), await post('arrivals', 'arrivals two')];
    const later = await post('from general', 'from general', 'general');
    await tab.page.goto(narrowUrl('channel:Denmark topic:arrivals'));
    await tab.page.locator(`#messages .msg[data-id="${arrivals[3]}"]`).waitFor(WAIT);
    assert.deepEqual(await ids(), [arrivals[1], arrivals[3]]);
    await move(arrivals[0], { topic: 'arrivals', propagate_mode: 'change_all' });
    await tab.page.locator(`#messages .msg[data-id="${arrivals[2]}"]`).waitFor(WAIT);
    assert.deepEqual(await ids(), arrivals);
    await move(later, { stream_id: String(denmark), topic: 'arrivals', propagate_mode: 'change_one' });
    await tab.page.locator(`#messages .msg[data-id="${later}"]`, { hasText: 'Denmark › arrivals' }).waitFor(WAIT);
    assert.deepEqual(await ids(), [...arrivals, later]);
    // Moved, not edited: so marked.
    for (const id of [arrivals[0], arrivals[2], later]) {
      assert.equal(await tab.page.locator(`#messages .msg[data-id="${id}"] .msg-head .edited`).textContent(), '(moved)');
    }
    assert.equal(await tab.page.locator(`#messages .msg[data-id="${arrivals[1]}"] .msg-head .edited`).count(), 0);

    // In a channel's narrow, messages moved within it stay, relabelled in
    // place; resolving a topic is no move.
    await apiAs(HAMLET, 'POST', '/mark_stream_as_read', { stream_id: String(denmark) });
    await tab.page.goto(narrowUrl('channel:Denmark'));
    const entry = (id) => tab.page.locator(`#messages .msg[data-id="${id}"]`);
    await entry(later).waitFor(WAIT);
    await tab.page.evaluate(() => { window.__sameDocument = true; });
    await move(arrivals[1], { topic: '✔ arrivals', propagate_mode: 'change_all' });
    await entry(arrivals[1]).locator('.recipient', { hasText: 'Denmark › ✔ arrivals' }).waitFor(WAIT);
    assert.equal(await entry(arrivals[1]).locator('.edited').count(), 0);
    await move(arrivals[1], { topic: 'arrivals again', propagate_mode: 'change_one' });
    await entry(arrivals[1]).locator('.recipient', { hasText: 'Denmark › arrivals again' }).waitFor(WAIT);
    assert.equal(await entry(arrivals[1]).locator('.edited').textContent(), '(moved)');
    assert.equal(await entry(arrivals[3]).locator('.edited').count(), 0);
    assert.equal(await tab.page.evaluate(() => window.__sameDocument), true, 'no reload');
    assert.deepEqual(dialogs, []);
  } finally {
    await tab.ctx.close();
  }
});

test('a phone-sized screen', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#menu').click();
  await page.locator('#sidebar #channels a', { hasText: 'Denmark' }).waitFor({ state: 'visible', ...WAIT });
  await shot('phone-sidebar');
  await page.keyboard.press('Escape');
  await shot('phone');
  await page.setViewportSize({ width: 1200, height: 800 });
});

test('sign-out revokes the session', async () => {
  const [cookie] = await context.cookies();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#signin-email').waitFor(WAIT);
  await shot('signed-out');
  const r = await fetch(`${server.site}/api/v1/users/me`, { headers: { Cookie: `${cookie.name}=${cookie.value}` } });
  assert.equal(r.status, 401);
  assert.deepEqual(await context.cookies(), []);
  assert.deepEqual(dialogs, []);
});
