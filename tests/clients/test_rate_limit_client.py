"""Real-client test of rate limits: what the `zulip` 0.9.1 bindings see
past a limit, and that a client which waits the `retry-after` the server
names slows down instead of failing.

zulip 0.9.1 retries only connection errors and 5xx replies: a 429 comes
back from each call as the error object (`code` RATE_LIMIT_HIT, a numeric
`retry-after`), never as an exception, so the caller decides to wait.

Run:  cargo build && python -m pytest -q tests/clients
"""

import time

from test_zulip_client import HAMLET, OTHELLO, clean_env, connect, err, natter, ok  # noqa: F401

# Three requests per three seconds per user: a limit a test reaches at once.
NATTER_ARGS = ["--rate-limit", "api-by-user=3/3"]


def call_patiently(call, what: str, attempts: int = 20) -> dict:
    """Calls `call` until it is not rate limited, sleeping the server's
    `retry-after` between tries (what a bound client should do)."""
    for _ in range(attempts):
        r = call()
        if r.get("code") != "RATE_LIMIT_HIT":
            return ok(r, what)
        time.sleep(r["retry-after"])
    raise AssertionError(f"{what}: still rate limited after {attempts} waits")


def test_the_bindings_report_the_limit_and_a_patient_client_succeeds(connect):
    hamlet = connect(HAMLET, role="member")
    # Some calls pass, then one is refused (50 calls would have to take
    # over 45 s for the bucket to keep up).
    passed = 0
    refused = None
    for _ in range(50):
        r = hamlet.get_profile()
        if r.get("result") == "error":
            refused = r
            break
        ok(r, "get_profile")
        passed += 1
    assert refused is not None, "50 calls at once were never limited"
    assert passed >= 2, f"refused after {passed} calls"
    err(refused, "RATE_LIMIT_HIT", "get_profile past the limit")
    after = refused["retry-after"]
    assert isinstance(after, (int, float)) and 0 < after <= 1.0, refused

    # Othello has a budget of his own.
    ok(connect(OTHELLO, role="member").get_profile(), "othello's get_profile")

    # Waiting as told, ten more calls all get through: slower, never failing.
    for i in range(10):
        call_patiently(hamlet.get_profile, f"patient get_profile {i}")
