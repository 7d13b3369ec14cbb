"""A decision taken in the web inbox, in real Chromium, is counted as the web's in ``/metrics``
(the browser's own ``Sec-Fetch-Site`` tells it apart from any other client of the API)."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect
from prometheus_client.parser import text_string_to_metric_families

from tests.deadline import HANG
from tests.web.conftest import TIMEOUT, send_now
from tests.web.test_inbox import card, start_run


def decisions(url: str, channel: str) -> float:
    """How many approvals the server counts as approved through `channel`."""
    text = httpx.get(f"{url}/metrics", timeout=HANG).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "signoff_decision_seconds_count"
        and sample.labels == {"channel": channel, "outcome": "approved"}
    )


def test_an_approval_in_the_web_inbox_is_counted_as_the_webs(page: Page, patient_url: str):
    web, api = decisions(patient_url, "web"), decisions(patient_url, "api")
    start_run(page, patient_url, "files", "write m to metrics.txt")
    write = card(page, "write_file")
    write.locator("button[data-action=approve]").click()
    send_now(write)
    expect(write.locator(".badge")).to_have_text("approved", timeout=TIMEOUT)
    assert decisions(patient_url, "web") == web + 1
    assert decisions(patient_url, "api") == api
