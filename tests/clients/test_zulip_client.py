"""Real-client test: the official `zulip` Python bindings (0.9.1) against a
freshly started `natter --dev`.

The server binary is `$NATTER_BIN` if set, else `<repo>/target/debug/natter`
(run `cargo build` first). Each test module run starts one server on a free
loopback port with an empty data dir and reads the seeded development
accounts from its stdout.

Run:  cargo build && python -m pytest -q tests/clients
"""

import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import zulip

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
STARTUP_TIMEOUT = 60.0
HEADER = "Development accounts (log in with email + API key, HTTP Basic):"
LISTENING_PREFIX = "natter: listening on http://127.0.0.1:"
ROLES = {"owner", "administrator", "moderator", "member", "guest", "bot"}

HAMLET = "hamlet@natter.test"  # member
OTHELLO = "othello@natter.test"  # member
POLONIUS = "polonius@natter.test"  # guest

# Environment variables the zulip library reads; they override (or fill in
# for) constructor arguments, so none may leak in from the caller's shell.
ZULIP_ENV_VARS = (
    "ZULIP_CONFIG",
    "ZULIP_API_KEY",
    "ZULIP_EMAIL",
    "ZULIP_SITE",
    "ZULIP_CERT",
    "ZULIP_CERT_KEY",
    "ZULIP_CERT_BUNDLE",
    "ZULIP_ALLOW_INSECURE",
)
# requests would send loopback traffic through a configured proxy.
PROXY_ENV_VARS = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def natter_bin() -> Path:
    env = os.environ.get("NATTER_BIN")
    if env:
        path = Path(env)
        if not path.is_absolute() and not path.exists() and (REPO_ROOT / path).exists():
            path = REPO_ROOT / path
        what = f"NATTER_BIN={env}"
    else:
        path = REPO_ROOT / "target" / "debug" / "natter"
        what = "the default server binary"
    if not path.is_file():
        pytest.fail(
            f"{what} not found at {path}: run `cargo build` first "
            "(or set NATTER_BIN to the natter binary)",
            pytrace=False,
        )
    return path.resolve()


@dataclass
class Account:
    realm: str
    role: str
    email: str
    api_key: str


@dataclass
class NatterServer:
    proc: subprocess.Popen
    site: str
    accounts: list = field(default_factory=list)
    stdout_lines: list = field(default_factory=list)
    stderr_path: Path = None

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError as e:
            return f"(could not read {self.stderr_path}: {e})"

    def account(self, email: str, role: str = None) -> Account:
        for a in self.accounts:
            if a.realm == "(default)" and a.email == email:
                if role is not None:
                    assert a.role == role, f"{email} is listed as {a.role}, expected {role}"
                return a
        raise AssertionError(f"no (default) realm account {email} in the dev account list:\n" + "\n".join(self.stdout_lines))


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _parse_startup(lines: list) -> list:
    """Checks the start-up banner and returns the listed accounts."""
    assert lines and lines[0] == HEADER, f"first stdout line should be the header {HEADER!r}; got {lines[:1]!r}"
    accounts = []
    i = 1
    while i < len(lines) and lines[i].startswith("  "):
        cols = lines[i].split()
        assert len(cols) == 4, f"account line should have 4 columns <realm> <role> <email> <api_key>: {lines[i]!r}"
        realm, role, email, api_key = cols
        assert role in ROLES, f"unknown role {role!r} in {lines[i]!r}"
        accounts.append(Account(realm, role, email, api_key))
        i += 1
    assert accounts, "no development accounts listed"
    assert i < len(lines) and lines[i].startswith("Try: curl "), f"expected a `Try: curl ...` line after the accounts; got {lines[i:i + 1]!r}"
    assert i + 2 == len(lines), f"unexpected stdout lines before the listening line: {lines[i + 1:-1]!r}"
    return accounts


@pytest.fixture(scope="module")
def natter(request):
    """A `natter --dev` server for the test module, with the module's
    `NATTER_ARGS` (a list of extra options) if it has one."""
    binary = natter_bin()
    extra = list(getattr(request.module, "NATTER_ARGS", []))
    tmp = Path(tempfile.mkdtemp(prefix="natter-client-test-"))
    data_dir = tmp / "data"
    stderr_path = tmp / "stderr.log"
    stderr_file = open(stderr_path, "wb")
    proc = subprocess.Popen(
        [str(binary), "--dev", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        text=True,
        bufsize=1,
    )
    stderr_file.close()
    server = NatterServer(proc=proc, site="", stderr_path=stderr_path)

    # A reader thread so the wait on the listening line can time out; it
    # keeps draining stdout afterwards so the server never blocks on a pipe.
    lines_q = queue.Queue()

    def reader():
        for line in proc.stdout:
            lines_q.put(line.rstrip("\n"))
        lines_q.put(None)

    threading.Thread(target=reader, daemon=True).start()

    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(
                    f"natter did not print '{LISTENING_PREFIX}<port>' within {STARTUP_TIMEOUT:.0f} s\n"
                    f"stdout so far:\n" + "\n".join(server.stdout_lines) + f"\nstderr:\n{server.stderr_text()}",
                    pytrace=False,
                )
            try:
                line = lines_q.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = proc.wait(timeout=10)
                pytest.fail(
                    f"natter exited (status {code}) before printing its listening line\n"
                    f"command: {proc.args}\nstdout:\n" + "\n".join(server.stdout_lines) + f"\nstderr:\n{server.stderr_text()}",
                    pytrace=False,
                )
            server.stdout_lines.append(line)
            if line.startswith("natter: listening on "):
                break
        assert line.startswith(LISTENING_PREFIX) and line[len(LISTENING_PREFIX):].isdigit(), f"unexpected listening line {line!r}"
        server.site = line[len("natter: listening on "):]
        server.accounts = _parse_startup(server.stdout_lines)
        yield server
    finally:
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ZULIP_ENV_VARS + PROXY_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def connect(natter, clean_env, tmp_path):
    """Returns a function that builds a zulip.Client for an email (and, by
    default, the API key the server printed for it)."""
    no_config = str(tmp_path / "no-zuliprc")  # never read ~/.zuliprc

    def make(email: str, api_key: str = None, role: str = None) -> zulip.Client:
        if api_key is None:
            api_key = natter.account(email, role).api_key
        # retry_on_errors=False: a 5xx is reported, not retried for 10 s.
        return zulip.Client(email=email, api_key=api_key, site=natter.site, config_file=no_config, retry_on_errors=False)

    return make


def ok(response: dict, what: str) -> dict:
    assert isinstance(response, dict), f"{what}: not a JSON object: {response!r}"
    assert response.get("result") == "success", f"{what}: expected success, got {response!r}"
    return response


def err(response: dict, code: str, what: str) -> dict:
    assert isinstance(response, dict), f"{what}: not a JSON object: {response!r}"
    assert response.get("result") == "error", f"{what}: expected an error, got {response!r}"
    assert response.get("code") == code, f"{what}: expected code {code}, got {response!r}"
    assert isinstance(response.get("msg"), str) and response["msg"], f"{what}: error without msg: {response!r}"
    return response


def user_ids(client: zulip.Client) -> dict:
    members = ok(client.get_members(), "get_members")["members"]
    return {m["email"]: m["user_id"] for m in members}


def test_client_connects_and_gets_profile(connect):
    client = connect(HAMLET, role="member")
    assert isinstance(client.zulip_version, str) and client.zulip_version
    assert isinstance(client.feature_level, int)
    profile = ok(client.get_profile(), "get_profile")
    assert isinstance(profile["user_id"], int)
    assert profile["full_name"] == "King Hamlet"
    assert profile["email"] == HAMLET
    assert user_ids(client)[HAMLET] == profile["user_id"]


def test_channel_message_round_trip(connect):
    client = connect(HAMLET, role="member")
    hamlet_id = user_ids(client)[HAMLET]
    content = "hello from zulip 0.9.1"
    sent = ok(
        client.send_message({"type": "stream", "to": "general", "topic": "client test", "content": content}),
        "send_message to #general",
    )
    assert isinstance(sent["id"], int) and not isinstance(sent["id"], bool)

    got = ok(client.get_raw_message(sent["id"]), f"get_raw_message({sent['id']})")
    assert got["raw_content"] == content
    message = got["message"]
    assert message["id"] == sent["id"]
    assert message["type"] == "stream"
    assert message["display_recipient"] == "general"
    assert message["subject"] == "client test"
    assert message["sender_email"] == HAMLET
    assert message["sender_id"] == hamlet_id
    assert content in message["content"]


def test_direct_messages_round_trip(connect):
    hamlet = connect(HAMLET, role="member")
    ids = user_ids(hamlet)
    othello_id = ids[OTHELLO]

    by_id = ok(
        hamlet.send_message({"type": "private", "to": [othello_id], "content": "a direct message"}),
        "send_message DM to [user id]",
    )
    by_email = ok(
        hamlet.send_message({"type": "private", "to": [OTHELLO], "content": "a direct message, by email"}),
        "send_message DM to [email]",
    )
    assert isinstance(by_id["id"], int) and isinstance(by_email["id"], int)
    assert by_id["id"] != by_email["id"]

    othello = connect(OTHELLO, role="member")
    for sent, content in ((by_id, "a direct message"), (by_email, "a direct message, by email")):
        for reader, name in ((hamlet, "hamlet"), (othello, "othello")):
            got = ok(reader.get_raw_message(sent["id"]), f"{name}: get_raw_message({sent['id']})")
            assert got["raw_content"] == content
            message = got["message"]
            assert message["id"] == sent["id"]
            assert message["type"] == "private"
            assert message["sender_email"] == HAMLET
            recipients = message["display_recipient"]
            assert isinstance(recipients, list), f"display_recipient should be a list of users: {recipients!r}"
            for r in recipients:
                assert {"id", "email", "full_name"} <= set(r), f"display_recipient entry lacks id/email/full_name: {r!r}"
            assert {r["email"]: r["id"] for r in recipients} == {HAMLET: ids[HAMLET], OTHELLO: othello_id}
            names = {r["email"]: r["full_name"] for r in recipients}
            assert names[HAMLET] == "King Hamlet"
            assert names[OTHELLO] == "Othello, the Moor of Venice"

    # A user outside the conversation cannot read it.
    polonius = connect(POLONIUS, role="guest")
    err(polonius.get_raw_message(by_id["id"]), "BAD_REQUEST", "guest reading someone else's DM")


def test_wrong_api_key_is_rejected(connect, natter):
    real = natter.account(HAMLET).api_key
    wrong = ("x" if real[0] != "x" else "y") * len(real)
    client = connect(HAMLET, api_key=wrong)  # server_settings needs no auth
    err(client.get_profile(), "INVALID_API_KEY", "get_profile with a wrong API key")


def test_send_to_missing_channel(connect):
    client = connect(HAMLET, role="member")
    name = "no such channel"
    response = client.send_message({"type": "stream", "to": name, "topic": "t", "content": "into the void"})
    err(response, "STREAM_DOES_NOT_EXIST", "send_message to a missing channel")
    assert response.get("stream") == name, f"error should name the channel in `stream`: {response!r}"


def test_channels_and_subscriptions_through_the_bindings(connect):
    hamlet = connect(HAMLET, role="member")
    ids = user_ids(hamlet)
    created = ok(
        hamlet.add_subscriptions(
            [{"name": "client channel", "description": "made by zulip 0.9.1"}],
            principals=[ids[OTHELLO]],
        ),
        "add_subscriptions creating a channel",
    )
    assert created["subscribed"] == {str(ids[OTHELLO]): ["client channel"]}
    mine = ok(hamlet.add_subscriptions([{"name": "client channel"}]), "add_subscriptions self")
    assert mine["subscribed"] == {str(ids[HAMLET]): ["client channel"]}
    stream_id = ok(hamlet.get_stream_id("client channel"), "get_stream_id")["stream_id"]
    subscribers = ok(hamlet.get_subscribers(stream="client channel"), "get_subscribers")["subscribers"]
    assert sorted(subscribers) == sorted([ids[HAMLET], ids[OTHELLO]])
    status = ok(hamlet.get_subscription_status(ids[OTHELLO], stream_id), "get_subscription_status")
    assert status["is_subscribed"] is True

    ok(
        hamlet.update_subscription_settings(
            [
                {"stream_id": stream_id, "property": "pin_to_top", "value": True},
                {"stream_id": stream_id, "property": "color", "value": "#aabbcc"},
                {"stream_id": stream_id, "property": "is_muted", "value": True},
            ]
        ),
        "update_subscription_settings",
    )
    ok(hamlet.update_stream({"stream_id": stream_id, "description": "new words"}), "update_stream")
    removed = ok(hamlet.remove_subscriptions(["client channel"]), "remove_subscriptions")
    assert removed["removed"] == ["client channel"]


def test_reactions_edits_history_and_deletion(connect):
    """What bots and scripts do with a message after sending it."""
    hamlet = connect(HAMLET, role="member")
    bot = connect("helper-bot@natter.test", role="bot")
    sent = ok(
        hamlet.send_message({"type": "stream", "to": "general", "topic": "lifecycle", "content": "first draft"}),
        "send_message",
    )
    mid = sent["id"]
    # zulip-run-bot reacts by name only.
    ok(bot.add_reaction({"message_id": mid, "emoji_name": "wave"}), "add_reaction by name")
    err(bot.add_reaction({"message_id": mid, "emoji_name": "wave"}), "REACTION_ALREADY_EXISTS", "duplicate reaction")
    reactions = ok(hamlet.get_raw_message(mid), "get_raw_message")["message"]["reactions"]
    assert [(r["emoji_name"], r["emoji_code"], r["reaction_type"]) for r in reactions] == [
        ("wave", "1f44b", "unicode_emoji")
    ]
    assert reactions[0]["user"]["full_name"] == "Helper Bot"
    ok(bot.remove_reaction({"message_id": mid, "emoji_name": "wave"}), "remove_reaction")
    err(bot.remove_reaction({"message_id": mid, "emoji_name": "wave"}), "REACTION_DOES_NOT_EXIST", "removing twice")

    ok(hamlet.update_message({"message_id": mid, "content": "final text"}), "update_message content")
    ok(
        hamlet.update_message({"message_id": mid, "topic": "lifecycle, moved", "propagate_mode": "change_all"}),
        "update_message topic",
    )
    message = ok(hamlet.get_raw_message(mid), "get_raw_message")["message"]
    assert message["subject"] == "lifecycle, moved"
    assert "final text" in message["content"]
    history = ok(hamlet.get_message_history(mid), "get_message_history")["message_history"]
    assert [h["content"] for h in history] == ["first draft", "final text", "final text"]
    assert history[0]["topic"] == "lifecycle" and history[-1]["prev_topic"] == "lifecycle"

    ok(hamlet.delete_message(mid), "delete_message")
    err(hamlet.get_raw_message(mid), "BAD_REQUEST", "reading a deleted message")


def test_call_on_each_event_receives_a_message(connect):
    """The bindings' event loop: register, long-poll GET /events in a
    thread, and hand each message event to the callback."""
    othello = connect(OTHELLO, role="member")
    hamlet = connect(HAMLET, role="member")
    registered = threading.Event()
    original_register = othello.register

    def register(*args, **kwargs):
        response = original_register(*args, **kwargs)
        if response.get("result") == "success":
            registered.set()
        return response

    othello.register = register  # observe the registration, change nothing
    received = queue.Queue()
    threading.Thread(
        target=othello.call_on_each_event,
        args=(received.put, ["message"]),
        kwargs={"apply_markdown": True},
        daemon=True,
    ).start()
    assert registered.wait(timeout=20), "call_on_each_event never registered a queue"
    content = "live via **call_on_each_event**"
    sent = ok(
        hamlet.send_message({"type": "stream", "to": "Denmark", "topic": "events", "content": content}),
        "send_message to #Denmark",
    )
    try:
        event = received.get(timeout=20)
    except queue.Empty:
        pytest.fail("no event reached the callback within 20 s", pytrace=False)
    assert event["type"] == "message"
    assert event["message"]["id"] == sent["id"]
    assert event["message"]["content"] == "<p>live via <strong>call_on_each_event</strong></p>"
    assert event["message"]["sender_email"] == HAMLET
    assert event["flags"] == []
    assert isinstance(event["id"], int)


def test_deregister_and_bad_queue(connect):
    client = connect(HAMLET, role="member")
    queue_id = ok(client.register(event_types=["message"]), "register")["queue_id"]
    ok(client.get_events(queue_id=queue_id, last_event_id=-1, dont_block=True), "get_events")
    ok(client.deregister(queue_id), "deregister")
    response = client.get_events(queue_id=queue_id, last_event_id=-1, dont_block=True)
    err(response, "BAD_EVENT_QUEUE_ID", "get_events on a deleted queue")
    assert response["msg"] == f"Bad event queue id: {queue_id}"


def test_render_presence_and_read_receipts_through_the_bindings(connect):
    hamlet = connect(HAMLET, role="member")
    othello = connect(OTHELLO, role="member")
    hamlet_id = user_ids(hamlet)[HAMLET]

    rendered = ok(hamlet.render_message({"content": "**bold** :smile:"}), "render_message")
    assert rendered["rendered"].startswith("<p><strong>bold</strong>"), rendered

    ok(hamlet.update_presence({"status": "active", "new_user_input": "true"}), "update_presence")
    realm = ok(othello.get_realm_presence(), "get_realm_presence")
    assert realm["presences"][HAMLET]["aggregated"]["status"] == "active", realm
    one = ok(othello.get_user_presence(HAMLET), "get_user_presence")
    assert one["presence"]["aggregated"]["status"] == "active", one

    sent = ok(
        othello.send_message({"type": "stream", "to": "general", "topic": "receipts", "content": "read me"}),
        "send_message",
    )
    ok(hamlet.update_message_flags({"messages": [sent["id"]], "op": "add", "flag": "read"}), "mark read")
    receipts = ok(
        othello.call_endpoint(f"messages/{sent['id']}/read_receipts", method="GET"),
        "read_receipts",
    )
    assert receipts["user_ids"] == [hamlet_id], receipts
