"""Real-client test: the `zulip` Python bindings' `upload_file`, and the
returned URL downloading the same bytes with HTTP Basic auth (as the
terminal client and bots fetch media).

Run:  cargo build && python -m pytest -q tests/clients
"""

import requests

from test_zulip_client import HAMLET, OTHELLO, clean_env, connect, natter, ok  # noqa: F401  (fixtures)


def test_upload_file_and_download_it_with_basic_auth(connect, natter, tmp_path):
    hamlet = connect(HAMLET)
    data = bytes(range(256)) * 4000  # 1000 KiB, every byte value
    path = tmp_path / "field notes.bin"
    path.write_bytes(data)
    with open(path, "rb") as fp:
        result = ok(hamlet.upload_file(fp), "upload_file")
    url = result["url"]
    assert result["uri"] == url
    assert url.startswith("/user_uploads/") and url.endswith("/field-notes.bin"), url

    key = natter.account(HAMLET).api_key
    got = requests.get(natter.site + url, auth=(HAMLET, key), timeout=30)
    assert got.status_code == 200, got.text
    assert got.content == data
    assert got.headers["X-Content-Type-Options"] == "nosniff"

    # Othello cannot, until a message he can read links it.
    othello_key = natter.account(OTHELLO).api_key
    assert requests.get(natter.site + url, auth=(OTHELLO, othello_key), timeout=30).status_code == 404
    ok(
        hamlet.send_message({"type": "stream", "to": "general", "topic": "files", "content": f"[notes]({url})"}),
        "send_message",
    )
    got = requests.get(natter.site + url, auth=(OTHELLO, othello_key), timeout=30)
    assert got.status_code == 200 and got.content == data

    listed = ok(hamlet.call_endpoint(url="attachments", method="GET"), "attachments")
    assert [a["name"] for a in listed["attachments"]] == ["field-notes.bin"]
    assert listed["upload_space_used"] == len(data)
