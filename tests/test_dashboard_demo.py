"""`forksync demo` ends with the dashboard's URL, and that page shows the demo's data."""

from __future__ import annotations

import re

import pytest

from bot import create_app
from tests.fixtures.demo import DemoRuns


@pytest.mark.slow
def test_demo_prints_the_dashboard_url_and_the_page_shows_its_data(demo_runs: DemoRuns) -> None:
    proc = demo_runs.first  # a real process in a fresh --dir (tests/fixtures/demo.py)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"dashboard of the demo's data: http://127\.0\.0\.1:\d+(/\S+)", proc.stdout)
    assert match, proc.stdout[-2000:]
    app = create_app({"FORKSYNC_DATA_DIR": str(demo_runs.first_dir / "data")})
    page = app.test_client().get(match.group(1))
    assert page.status_code == 200
    html = page.text
    # After the merges (the bundle, then the three chain PRs out of order, the resolved one once
    # approved) and the maintainer's /skip of the deferred commit, the page says 0.0 days behind,
    # backlog 0, and lists the decision with its reason and who made it.
    figures = dict(
        re.findall(
            r'data-figure="([^"]+)"><span class="label">[^<]*</span>\s*<[^>]*class="value"[^>]*>([^<]*)<',
            html,
        )
    )
    assert figures.get("days behind upstream") == "0.0" and figures.get("backlog commits") == "0", figures
    decisions = html.split('id="decisions-table"')[1].split("</table>")[0]
    assert "#7005" in decisions and "by @maintainer via /skip" in decisions
    assert "example-org/triton" in app.test_client().get("/").text
