"""Real-client test of the reading endpoints: the `zulip` 0.9.1 bindings'
get_messages (both narrow syntaxes, the anchors zulip-term sends),
get_stream_topics, get_subscriptions, get_streams and
update_message_flags against `natter --dev`.

Uses the `natter` server and `connect` client fixtures of the real-client
suite.
Run:  cargo build && python -m pytest -q tests/clients
"""

# The server and client fixtures and the response checks of the real-client
# suite (test_zulip_client.py).
from test_zulip_client import HAMLET, OTHELLO, clean_env, connect, err, natter, ok  # noqa: F401

LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000


def ids(response: dict) -> list:
    return [m["id"] for m in response["messages"]]


def test_get_messages_narrows_and_anchors(connect):
    hamlet = connect(HAMLET, role="member")
    othello = connect(OTHELLO, role="member")
    sent = []
    for i in range(3):
        r = ok(
            hamlet.send_message({"type": "stream", "to": "Denmark", "topic": "reading", "content": f"line {i}"}),
            "send_message",
        )
        sent.append(r["id"])

    # The dict syntax the bindings document, and the legacy pairs zulip-term sends.
    modern = [{"operator": "channel", "operand": "Denmark"}, {"operator": "topic", "operand": "reading"}]
    legacy = [["stream", "Denmark"], ["topic", "reading"]]
    for narrow in (modern, legacy):
        r = ok(othello.get_messages({"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": narrow}), "get_messages")
        assert ids(r) == sent
        assert r["found_newest"] is True and r["found_oldest"] is True
        message = r["messages"][0]
        for key in ("id", "type", "timestamp", "content", "sender_full_name", "flags", "reactions",
                    "is_me_message", "display_recipient", "stream_id", "subject"):
            assert key in message, f"message lacks {key}: {message}"
        assert message["display_recipient"] == "Denmark" and message["subject"] == "reading"

    # zulip-term's start-up call: anchor 0 with use_first_unread_anchor.
    r = ok(
        othello.get_messages({"anchor": 0, "use_first_unread_anchor": True, "num_before": 30, "num_after": 10,
                              "apply_markdown": True, "client_gravatar": True, "narrow": legacy}),
        "get_messages first unread",
    )
    assert r["anchor"] == sent[0]
    assert "read" not in r["messages"][ids(r).index(sent[0])]["flags"]

    # Marking read, then nothing unread: Zulip's sentinel anchor.
    ok(othello.update_message_flags({"messages": sent, "op": "add", "flag": "read"}), "update_message_flags")
    r = ok(othello.get_messages({"anchor": "first_unread", "num_before": 5, "num_after": 5, "narrow": legacy}), "first_unread")
    assert r["anchor"] == LARGER_THAN_MAX_MESSAGE_ID
    # zulip-term's search anchor, above every id.
    r = ok(othello.get_messages({"anchor": 10000000000, "num_before": 30, "num_after": 0,
                                 "narrow": legacy + [["search", "LINE"]]}), "search")
    assert ids(r) == sent

    err(othello.get_messages({"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": [["stream", "core team"]]}),
        "BAD_NARROW", "private channel narrow")


def test_topics_subscriptions_streams_and_stars(connect):
    hamlet = connect(HAMLET, role="member")
    ok(hamlet.send_message({"type": "stream", "to": "Denmark", "topic": "older", "content": "a"}), "send")
    sent = ok(hamlet.send_message({"type": "stream", "to": "Denmark", "topic": "newer", "content": "b"}), "send")

    subs = ok(hamlet.get_subscriptions(), "get_subscriptions")["subscriptions"]
    by_name = {s["name"]: s for s in subs}
    assert set(by_name) == {"general", "Denmark", "core team"}
    for s in subs:
        assert s["color"].startswith("#") and len(s["color"]) == 7
        assert s["in_home_view"] is True and "email_address" in s and "stream_post_policy" in s

    topics = ok(hamlet.get_stream_topics(by_name["Denmark"]["stream_id"]), "get_stream_topics")["topics"]
    assert [t["name"] for t in topics[:2]] == ["newer", "older"]
    assert topics[0]["max_id"] == sent["id"]

    streams = ok(hamlet.get_streams(include_public=True, include_subscribed=True), "get_streams")["streams"]
    assert {s["name"] for s in streams} == {"general", "Denmark", "core team"}

    ok(hamlet.update_message_flags({"messages": [sent["id"]], "op": "add", "flag": "starred"}), "star")
    r = ok(hamlet.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0,
                                "narrow": [{"operator": "is", "operand": "starred"}]}), "is:starred")
    assert ids(r) == [sent["id"]]
    assert "starred" in r["messages"][0]["flags"]
    err(hamlet.update_message_flags({"messages": [sent["id"]], "op": "add", "flag": "mentioned"}),
        "BAD_REQUEST", "non-editable flag")
