"""Real-bot tests: zulip-botserver 0.9.1 (PyPI, the bot framework
matching zulip==0.9.1) runs the helloworld bot as an outgoing-webhook bot
of natter, and zulip-run-bot runs a bot that keeps state through
`bot_handler.storage` (`/bot_storage`).

natter posts each triggering message to the bot server (deliveries may
reach 127.0.0.1 through `--outgoing-webhook-allow`); the bot server
answers through the API as the bot.

Run:  cargo build && python -m pytest -q tests/clients
"""

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from test_zulip_client import HAMLET, clean_env, connect, natter, ok, user_ids  # noqa: F401

NATTER_ARGS = ["--outgoing-webhook-allow", "127.0.0.1"]
BIN = Path(sys.executable).parent
WAIT = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the bot process exited with {proc.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def wait_for_message(client, narrow, content, sender_id) -> dict:
    """Polls the narrow until a message from `sender_id` with `content`
    is there (the bot answers asynchronously)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = ok(client.get_messages({"anchor": "newest", "num_before": 50, "num_after": 0,
                                        "narrow": narrow, "apply_markdown": False}), "get_messages")
        for m in found["messages"]:
            if m["sender_id"] == sender_id and m["content"] == content:
                return m
        assert time.monotonic() < deadline, f"no {content!r} from {sender_id} in {found['messages']!r}"
        time.sleep(0.2)


def create_bot(hamlet, short_name, full_name, **extra) -> dict:
    ok(hamlet.call_endpoint("bots", method="POST",
                            request={"full_name": full_name, "short_name": short_name, **extra}),
       "POST /bots")
    bots = ok(hamlet.call_endpoint("bots", method="GET"), "GET /bots")["bots"]
    return next(b for b in bots if b["full_name"] == full_name)


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def test_botserver_runs_helloworld_for_a_mention_and_a_direct_message(connect, natter, tmp_path):
    hamlet = connect(HAMLET, role="member")
    port = free_port()
    bot = create_bot(hamlet, "hello", "Hello World", bot_type=3,
                     payload_url=json.dumps(f"http://127.0.0.1:{port}/"), interface_type=1)
    assert bot["services"][0]["base_url"] == f"http://127.0.0.1:{port}/"
    rc = tmp_path / "botserverrc"
    rc.write_text(
        "[helloworld]\n"
        f"email={bot['email']}\nkey={bot['api_key']}\nsite={natter.site}\n"
        f"token={bot['services'][0]['token']}\n"
    )
    server = subprocess.Popen(
        [str(BIN / "zulip-botserver"), "--config-file", str(rc), "--hostname", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        wait_for_port(port, server)
        # A mention in a channel: the reply comes in the same topic.
        ok(hamlet.send_message({"type": "stream", "to": "Denmark", "topic": "bots",
                                "content": "@**Hello World** hi there"}), "send mention")
        narrow = [{"operator": "channel", "operand": "Denmark"}, {"operator": "topic", "operand": "bots"}]
        wait_for_message(hamlet, narrow, "beep boop", bot["user_id"])
        # A direct message: the reply comes in the conversation.
        ok(hamlet.send_message({"type": "private", "to": [bot["user_id"]], "content": "hello?"}),
           "send direct message")
        narrow = [{"operator": "dm", "operand": [bot["email"]]}]
        wait_for_message(hamlet, narrow, "beep boop", bot["user_id"])
    finally:
        output = stop(server)
    assert "Traceback" not in output, output


def run_counter(rc: Path) -> subprocess.Popen:
    bot_file = Path(__file__).parent / "bots" / "storage_counter.py"
    return subprocess.Popen([str(BIN / "zulip-run-bot"), str(bot_file), "--config-file", str(rc)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_run_bot_keeps_state_in_bot_storage(connect, natter, tmp_path):
    hamlet = connect(HAMLET, role="member")
    bot = create_bot(hamlet, "counter", "Counter")
    rc = tmp_path / "zuliprc"
    rc.write_text(f"[api]\nemail={bot['email']}\nkey={bot['api_key']}\nsite={natter.site}\n")
    narrow = [{"operator": "dm", "operand": [bot["email"]]}]
    as_bot = connect(bot["email"], api_key=bot["api_key"])

    proc = run_counter(rc)
    try:
        # The runner registers its queue before it handles anything: wait
        # for the first answer with a few tries.
        deadline = time.monotonic() + WAIT
        while True:
            ok(hamlet.send_message({"type": "private", "to": [bot["user_id"]], "content": "count"}), "send")
            found = ok(hamlet.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0,
                                            "narrow": narrow, "apply_markdown": False}), "get")["messages"]
            if any(m["content"] == "count: 1" for m in found):
                break
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the bot never answered"
            time.sleep(0.5)
    finally:
        stop(proc)
    # However many of the tries it answered, storage holds its last count.
    stored = ok(as_bot.get_storage(), "get_storage")["storage"]
    last = json.loads(stored["count"])
    assert last >= 1
    # A new run reads the count back from the server's storage.
    proc = run_counter(rc)
    try:
        deadline = time.monotonic() + WAIT
        while True:
            ok(hamlet.send_message({"type": "private", "to": [bot["user_id"]], "content": "count"}), "send")
            found = ok(hamlet.get_messages({"anchor": "newest", "num_before": 50, "num_after": 0,
                                            "narrow": narrow, "apply_markdown": False}), "get")["messages"]
            counts = [int(m["content"].split(": ")[1]) for m in found if m["content"].startswith("count: ")]
            if max(counts) > last:
                break
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "the second run never answered"
            time.sleep(0.5)
    finally:
        stop(proc)
    stored = ok(as_bot.get_storage(), "get_storage")["storage"]
    assert json.loads(stored["count"]) > last
