"""Real-client test of bulk read state and scheduled messages: the `zulip`
0.9.1 bindings' mark_all_as_read, mark_stream_as_read, mark_topic_as_read,
and call_endpoint for messages/flags/narrow and scheduled_messages, against
`natter --dev`.

Uses the `natter` server and `connect` client fixtures of the real-client
suite.
Run:  cargo build && python -m pytest -q tests/clients
"""

import time

# The server and client fixtures and the response checks of the real-client
# suite (test_zulip_client.py).
from test_zulip_client import HAMLET, OTHELLO, clean_env, connect, err, natter, ok  # noqa: F401


def unread_in(client, narrow: list) -> list:
    narrow = narrow + [{"operator": "is", "operand": "unread"}]
    r = ok(client.get_messages({"anchor": "newest", "num_before": 100, "num_after": 0, "narrow": narrow}), "get_messages")
    return [m["id"] for m in r["messages"]]


def channel_id(client, name: str) -> int:
    streams = ok(client.get_streams(), "get_streams")["streams"]
    return next(s["stream_id"] for s in streams if s["name"] == name)


def test_mark_as_read_helpers(connect):
    othello = connect(OTHELLO, role="member")
    hamlet = connect(HAMLET, role="member")
    for topic in ("bulk one", "bulk one", "bulk two"):
        ok(othello.send_message({"type": "stream", "to": "Denmark", "topic": topic, "content": "x"}), "send")
    ok(othello.send_message({"type": "stream", "to": "general", "topic": "bulk", "content": "y"}), "send")
    denmark = channel_id(hamlet, "Denmark")
    in_denmark = [{"operator": "channel", "operand": "Denmark"}]

    ok(hamlet.mark_topic_as_read(denmark, "bulk one"), "mark_topic_as_read")
    assert unread_in(hamlet, in_denmark + [{"operator": "topic", "operand": "bulk one"}]) == []
    assert len(unread_in(hamlet, in_denmark)) == 1
    err(hamlet.mark_topic_as_read(denmark, "no such topic"), "BAD_REQUEST", "unknown topic")

    ok(hamlet.mark_stream_as_read(denmark), "mark_stream_as_read")
    assert unread_in(hamlet, in_denmark) == []
    assert unread_in(hamlet, [{"operator": "channel", "operand": "general"}]) != []
    err(hamlet.mark_stream_as_read(999999), "STREAM_DOES_NOT_EXIST", "unknown channel")

    r = ok(hamlet.mark_all_as_read(), "mark_all_as_read")
    assert r.get("complete") is True
    assert unread_in(hamlet, []) == []


def test_flags_for_a_narrow(connect):
    othello = connect(OTHELLO, role="member")
    hamlet = connect(HAMLET, role="member")
    sent = [
        ok(othello.send_message({"type": "stream", "to": "Denmark", "topic": "narrow flags", "content": str(i)}), "send")["id"]
        for i in range(3)
    ]
    narrow = [{"operator": "channel", "operand": "Denmark"}, {"operator": "topic", "operand": "narrow flags"}]
    r = ok(
        hamlet.call_endpoint(
            "messages/flags/narrow",
            method="POST",
            request={"anchor": "oldest", "num_before": 0, "num_after": 10, "narrow": narrow, "op": "add", "flag": "starred"},
        ),
        "messages/flags/narrow",
    )
    assert (r["processed_count"], r["updated_count"]) == (3, 3)
    assert (r["first_processed_id"], r["last_processed_id"]) == (sent[0], sent[-1])
    assert r["found_oldest"] is True and r["found_newest"] is True
    starred = ok(
        hamlet.get_messages({"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": [{"operator": "is", "operand": "starred"}]}),
        "get_messages is:starred",
    )
    assert [m["id"] for m in starred["messages"]] == sent


def test_scheduled_message_is_listed_edited_and_delivered(connect):
    hamlet = connect(HAMLET, role="member")
    denmark = channel_id(hamlet, "Denmark")
    at = int(time.time()) + 2
    created = ok(
        hamlet.call_endpoint(
            "scheduled_messages",
            method="POST",
            request={"type": "stream", "to": denmark, "topic": "scheduled", "content": "draft", "scheduled_delivery_timestamp": at},
        ),
        "POST scheduled_messages",
    )
    sid = created["scheduled_message_id"]
    listed = ok(hamlet.call_endpoint("scheduled_messages", method="GET"), "GET scheduled_messages")["scheduled_messages"]
    assert [s["scheduled_message_id"] for s in listed] == [sid]
    assert listed[0]["to"] == denmark and listed[0]["topic"] == "scheduled" and listed[0]["failed"] is False
    ok(hamlet.call_endpoint(f"scheduled_messages/{sid}", method="PATCH", request={"content": "final"}), "PATCH")
    past = int(time.time()) - 60
    err(
        hamlet.call_endpoint(
            "scheduled_messages",
            method="POST",
            request={"type": "stream", "to": denmark, "topic": "t", "content": "x", "scheduled_delivery_timestamp": past},
        ),
        "BAD_REQUEST",
        "a past delivery time",
    )

    narrow = [{"operator": "channel", "operand": "Denmark"}, {"operator": "topic", "operand": "scheduled"}]
    deadline = time.monotonic() + 20
    while True:
        r = ok(hamlet.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": narrow}), "get_messages")
        if r["messages"]:
            break
        assert time.monotonic() < deadline, "the scheduled message was not delivered"
        time.sleep(0.1)
    assert [m["content"] for m in r["messages"]] == ["<p>final</p>"]
    assert ok(hamlet.call_endpoint("scheduled_messages", method="GET"), "GET")["scheduled_messages"] == []
    err(hamlet.call_endpoint(f"scheduled_messages/{sid}", method="DELETE"), "NOT_FOUND", "delete a delivered one")
