"""Real-client test of the settings area: the `zulip` Python bindings
(0.9.1) calling what they have methods for — typing, alert words, the
deprecated notification-settings endpoint, the generic call_endpoint for
PATCH /settings, drafts and user topics — and an event queue seeing the
changes.

Run:  cargo build && python -m pytest -q tests/clients
"""

from test_zulip_client import HAMLET, OTHELLO, clean_env, connect, err, natter, ok, user_ids  # noqa: F401


def test_settings_through_the_bindings(connect):
    hamlet = connect(HAMLET, role="member")
    queue = ok(hamlet.register(event_types=["user_settings", "update_global_notifications", "alert_words"]), "register")

    ok(hamlet.update_notification_settings({"enable_sounds": False}), "update_notification_settings")
    result = hamlet.call_endpoint("settings", method="PATCH", request={"twenty_four_hour_time": True, "dense_mode": True})
    ok(result, "PATCH /settings")
    assert result.get("ignored_parameters_unsupported") == ["dense_mode"], result
    err(hamlet.call_endpoint("settings", method="PATCH", request={"color_scheme": 9}), "BAD_REQUEST", "bad color_scheme")

    ok(hamlet.add_alert_words(["Yorick"]), "add_alert_words")
    assert ok(hamlet.get_alert_words(), "get_alert_words")["alert_words"] == ["Yorick"]
    ok(hamlet.remove_alert_words(["yorick"]), "remove_alert_words")

    events = ok(
        hamlet.get_events(queue_id=queue["queue_id"], last_event_id=queue["last_event_id"], dont_block=True),
        "get_events",
    )["events"]
    kinds = [e["type"] for e in events if e["type"] != "heartbeat"]
    assert kinds == ["user_settings", "update_global_notifications", "user_settings", "alert_words", "alert_words"], kinds
    assert events[0]["property"] == "enable_sounds" and events[0]["value"] is False

    fresh = ok(hamlet.register(fetch_event_types=["user_settings", "update_global_notifications", "update_display_settings"]), "register")
    assert fresh["user_settings"]["twenty_four_hour_time"] is True
    assert fresh["enable_sounds"] is False
    assert fresh["twenty_four_hour_time"] is True


def test_typing_and_user_topics(connect):
    hamlet = connect(HAMLET, role="member")
    othello = connect(OTHELLO, role="member")
    ids = user_ids(hamlet)
    queue = ok(othello.register(event_types=["typing"]), "register")
    ok(hamlet.set_typing_status({"op": "start", "to": [ids[OTHELLO]]}), "set_typing_status")
    events = ok(
        othello.get_events(queue_id=queue["queue_id"], last_event_id=queue["last_event_id"], dont_block=True),
        "get_events",
    )["events"]
    typing = [e for e in events if e["type"] == "typing"]
    assert len(typing) == 1, events
    assert typing[0]["op"] == "start"
    assert typing[0]["sender"]["email"] == HAMLET
    err(hamlet.set_typing_status({"op": "start", "type": "stream", "topic": "t"}), "BAD_REQUEST", "no stream_id")

    ok(hamlet.mute_topic({"op": "add", "stream": "general", "topic": "ghosts"}), "mute_topic")
    err(hamlet.mute_topic({"op": "add", "stream": "general", "topic": "ghosts"}), "BAD_REQUEST", "muted twice")
    state = ok(hamlet.register(fetch_event_types=["muted_topics", "user_topic"]), "register")
    assert [t[:2] for t in state["muted_topics"]] == [["general", "ghosts"]]
    assert state["user_topics"][0]["visibility_policy"] == 1
