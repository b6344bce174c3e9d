"""pytest glue for the real-client tests: attach the server's stderr to the
report of any test that failed while a natter server was running."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    server = getattr(item, "funcargs", {}).get("natter")
    if server is None:
        return
    report.sections.append(("natter server stderr", server.stderr_text()))
