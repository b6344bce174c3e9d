// Real-client test: the npm `zulip-js` bindings (2.1.0, pinned by
// package-lock.json) against a freshly started `natter --dev`.
//
// zulip-js sends every POST as multipart/form-data and every other
// method's parameters in the query string, so this exercises natter's own
// HTTP loop the way a JavaScript client does. It logs in through
// POST /dev_fetch_api_key, sends a channel message and a direct message,
// and reads its own message back. Any error reply fails the test loudly.
// Grows with each endpoint that lands (register and events, reactions,
// edits).
//
// The server binary is $NATTER_BIN if set, else <repo>/target/debug/natter.
// Run:  cargo build && (cd tests/clients/js && npm ci && npm test)

'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const zulip = require('zulip-js');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const HAMLET = 'hamlet@natter.test';
const OTHELLO = 'othello@natter.test';
const STARTUP_MS = 60000;

let server; // { proc, site, dir, stderr }

function natterBin() {
  const env = process.env.NATTER_BIN;
  const bin = env ? path.resolve(REPO_ROOT, env) : path.join(REPO_ROOT, 'target', 'debug', 'natter');
  if (!fs.existsSync(bin)) {
    throw new Error(`natter binary not found at ${bin}: run \`cargo build\` first (or set NATTER_BIN)`);
  }
  return bin;
}

function startServer() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'natter-js-'));
  const proc = spawn(
    natterBin(),
    ['--dev', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data'), '--workers', '2'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
        resolve(state);
      }
    });
  });
}

// A success envelope, or a loud failure naming the call.
function ok(what, reply) {
  if (!reply || reply.result !== 'success') {
    throw new Error(`${what} failed: ${JSON.stringify(reply)}\nserver stderr:\n${server && server.stderr}`);
  }
  return reply;
}

before(async () => {
  server = await startServer();
});

after(() => {
  if (server) {
    server.proc.kill('SIGKILL');
    fs.rmSync(server.dir, { recursive: true, force: true });
  }
});

test('zulip-js logs in, sends to a channel and directly, and reads back', async () => {
  // Log in: dev_fetch_api_key is public; the bindings need some key to
  // build their Authorization header, which the endpoint ignores.
  const anon = await zulip({ username: HAMLET, apiKey: 'unused', realm: server.site });
  const login = ok('dev_fetch_api_key', await anon.callEndpoint('/dev_fetch_api_key', 'POST', { username: HAMLET }));
  assert.equal(login.email, HAMLET);
  const client = await zulip({ username: HAMLET, apiKey: login.api_key, realm: server.site });

  const settings = ok('server.settings', await client.server.settings());
  assert.equal(settings.realm_name, 'Natter Dev');
  const me = ok('users.me.getProfile', await client.users.me.getProfile());
  assert.equal(me.email, HAMLET);
  const users = ok('users.retrieve', await client.users.retrieve());
  const othello = users.members.find((u) => u.email === OTHELLO);
  assert.ok(othello, `no ${OTHELLO} in ${JSON.stringify(users.members.map((u) => u.email))}`);

  // A channel message (multipart body; `to` as a JSON list, as the
  // bindings send arrays).
  const sent = ok('messages.send (channel)', await client.messages.send({
    type: 'stream',
    to: ['general'],
    topic: 'zulip-js',
    content: 'Hello from **zulip-js** ✓',
  }));
  assert.equal(typeof sent.id, 'number');

  // A direct message to Othello, by user id.
  const direct = ok('messages.send (direct)', await client.messages.send({
    type: 'direct',
    to: [othello.user_id],
    content: 'psst, from zulip-js',
  }));
  assert.notEqual(direct.id, sent.id);

  // Read both back (GET with the id in the path and the query string).
  const got = ok('messages.getById', await client.messages.getById({ message_id: sent.id }));
  assert.equal(got.raw_content, 'Hello from **zulip-js** ✓');
  assert.equal(got.message.id, sent.id);
  assert.equal(got.message.sender_email, HAMLET);
  assert.match(got.message.content, /<strong>zulip-js<\/strong>/);
  const gotDirect = ok('messages.getById (direct)', await client.messages.getById({ message_id: direct.id }));
  assert.equal(gotDirect.raw_content, 'psst, from zulip-js');

  // Othello sees the direct message too.
  const othelloLogin = ok('dev_fetch_api_key (othello)',
    await anon.callEndpoint('/dev_fetch_api_key', 'POST', { username: OTHELLO }));
  const other = await zulip({ username: OTHELLO, apiKey: othelloLogin.api_key, realm: server.site });
  const seen = ok('messages.getById (as othello)', await other.messages.getById({ message_id: direct.id }));
  assert.equal(seen.raw_content, 'psst, from zulip-js');

  // A refusal comes back as a Zulip error, not a crash.
  const refused = await client.messages.send({ type: 'stream', to: ['no such channel'], topic: 't', content: 'x' });
  assert.equal(refused.result, 'error');
  assert.equal(refused.code, 'STREAM_DOES_NOT_EXIST');
});

test('zulip-js previews a message with messages.render', async () => {
  const anon = await zulip({ username: HAMLET, apiKey: 'unused', realm: server.site });
  const login = ok('dev_fetch_api_key', await anon.callEndpoint('/dev_fetch_api_key', 'POST', { username: HAMLET }));
  const client = await zulip({ username: HAMLET, apiKey: login.api_key, realm: server.site });
  // POST /messages/render: a multipart body on a path that is not a
  // message id.
  const rendered = ok('messages.render', await client.messages.render('**bold** :smile:'));
  assert.match(rendered.rendered, /^<p><strong>bold<\/strong>/);
  assert.match(rendered.rendered, /emoji-1f642/);
});

test('zulip-js emojis.retrieve lists the realm custom emoji', async () => {
  const anon = await zulip({ username: HAMLET, apiKey: 'unused', realm: server.site });
  const login = ok('dev_fetch_api_key', await anon.callEndpoint('/dev_fetch_api_key', 'POST', { username: HAMLET }));
  const client = await zulip({ username: HAMLET, apiKey: login.api_key, realm: server.site });
  // A fresh dev realm has none: an empty dict, not a 404.
  const emoji = ok('emojis.retrieve', await client.emojis.retrieve());
  assert.deepEqual(emoji.emoji, {});
});
