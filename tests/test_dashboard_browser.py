"""The dashboard in a real browser: Debian's headless chromium, driven by Selenium (chromedriver).

A test server (werkzeug, a thread) serves ``create_app`` over a recorded feed; the loopback
GitHub serves the OAuth pages. The tests assert what a maintainer sees (values, links, times in
their zone, the login wall, the phone layout) and keep screenshots under ``tmp/artefacts/dashboard``
(copied into docs/img/ for docs/dashboard.md).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import create_app
from core.dashboard.store import SqlFeedStore
from tests.fixtures.dashboard import NOW, bad_feed, recorded_feed, sha
from tests.loopback_github import LoopbackGitHub

pytestmark = pytest.mark.slow

ARTEFACTS = Path(__file__).resolve().parents[1] / "tmp" / "artefacts" / "dashboard"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def server(tmp_path: Path, loopback_github: LoopbackGitHub) -> Iterator[tuple[str, LoopbackGitHub]]:
    from werkzeug.serving import make_server

    gh = loopback_github
    gh.add_repo("acme/triton")
    gh.add_repo("acme/secret", private=True)
    gh.set_permission("acme/secret", "alice", "read")
    store = SqlFeedStore(None, tmp_path)
    store.put(recorded_feed("acme/triton"))
    store.put(bad_feed("acme/behind"))
    store.put(recorded_feed("acme/secret", private=True))
    app = create_app(
        {
            "FORKSYNC_DATA_DIR": str(tmp_path),
            "FORKSYNC_SESSION_SECRET": "x" * 32,
            "GITHUB_API_URL": gh.api_url,
            **gh.oauth_client(),
        },
        feeds=store,
    )
    app.extensions["forksync.dashboard"].clock = lambda: NOW
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", gh
    finally:
        httpd.shutdown()
        thread.join(5)


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.fail(
            "chromium and chromedriver are needed: apt-get install -y chromium chromium-driver (scripts/dev does)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--lang=en-US",
        "--hide-scrollbars",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    # Times must be shown in the viewer's zone: this viewer is in Tokyo (UTC+9).
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})
    try:
        yield driver
    finally:
        driver.quit()


def _shot(driver: Any, name: str, width: int = 1280) -> Path:
    """A full-page screenshot: the viewport set to the page's whole height through CDP."""
    driver.set_window_size(width, 900)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500},
    )
    height = int(driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]["height"])
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": min(height, 8000), "deviceScaleFactor": 1, "mobile": width < 500},
    )
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path


def _by_css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def _all_css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def test_index_lists_public_forks_with_bad_values_marked(
    server: tuple[str, LoopbackGitHub], browser: Any
) -> None:
    url, _ = server
    browser.get(url + "/")
    rows = {r.get_attribute("data-repo"): r for r in _all_css(browser, "table.forks tr[data-repo]")}
    assert set(rows) == {"acme/triton", "acme/behind"}  # not the private one
    behind = rows["acme/behind"].find_elements("css selector", "td")
    assert behind[1].text == "12.5" and "bad" in (behind[1].get_attribute("class") or "")
    assert _shot(browser, "index").stat().st_size > 10_000


def test_fork_page_shows_values_links_and_times_in_the_viewers_zone(
    server: tuple[str, LoopbackGitHub], browser: Any
) -> None:
    url, _ = server
    browser.get(url + "/acme/triton")
    feed = recorded_feed("acme/triton")
    last = feed.series[-1]
    big = _by_css(browser, '[data-figure="days behind upstream"] .value')
    assert big.text == f"{last.days_behind:.1f}"
    assert big.get_attribute("href") == f"https://github.com/triton-lang/triton/commit/{last.frontier}"
    assert _by_css(browser, '[data-figure="backlog commits"] .value').text == str(last.backlog)
    # In flight: every number links to what is behind it.
    links = {a.text: a.get_attribute("href") for a in _all_css(browser, "#in-flight-table a")}
    assert links["12"] == "https://github.com/acme/triton/pull/412"
    assert links["success"] == "https://github.com/acme/triton/runs/9001"
    assert "@layout-team, @alice" in _by_css(browser, "#in-flight-table").text
    # Trunk health: a run strip cell per run, each linking its check run.
    cells = _all_css(browser, 'tr[data-suite="lit"] .strip a')
    assert len(cells) == 20 and cells[6].get_attribute("href") == "https://github.com/acme/triton/runs/7006"
    regression = _by_css(browser, 'tr[data-metric="matmul/tflops"] .regression')
    assert "-7.9%" in regression.text and "bisected" in regression.text and "3 steps" in regression.text
    reg_links = {
        a.get_attribute("class"): a.get_attribute("href")
        for a in _all_css(browser, "#l2-table .regression a")
    }
    assert reg_links["culprit"] == f"https://github.com/acme/triton/commit/{sha('culprit')}"
    assert (
        reg_links["bisection"] == f"https://github.com/acme/triton/compare/{sha('trunk9')}...{sha('trunk10')}"
    )
    assert reg_links["tracking"] == "https://github.com/acme/triton/issues/409"
    # The page's one script rewrote <time> in the viewer's zone: "as of" is 09:50 UTC = 18:50 in Tokyo.
    stamp = _by_css(browser, "p.muted time")
    assert stamp.get_attribute("datetime") == "2025-12-01T09:50:00Z"
    assert "UTC" not in stamp.text and "6:50" in stamp.text and "PM" in stamp.text
    # Inline SVG, nothing fetched from elsewhere.
    assert len(_all_css(browser, "svg.plot")) >= 5
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(r.startswith(url) for r in resources)
    assert _shot(browser, "fork-1280").stat().st_size > 50_000


def test_fork_page_reads_on_a_phone(server: tuple[str, LoopbackGitHub], browser: Any) -> None:
    """At 390 px nothing overflows the page sideways (wide tables scroll inside their box)."""
    url, _ = server
    browser.set_window_size(390, 844)
    browser.get(url + "/acme/triton")
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1
    figure = _by_css(browser, '[data-figure="days behind upstream"]')
    assert figure.size["width"] <= 390
    _shot(browser, "fork-phone", width=390)


def test_private_fork_is_behind_the_github_login(server: tuple[str, LoopbackGitHub], browser: Any) -> None:
    """A stranger gets 'Not found' (no name); after logging in as a reader the page opens."""
    url, gh = server
    browser.get(url + "/acme/secret")
    assert _by_css(browser, "h1").text == "Not found"
    assert "acme/secret" not in _by_css(browser, "main").text
    _shot(browser, "login-wall")
    gh.sign_in_as("alice")
    _by_css(browser, "main a[href^='/login']").click()  # -> GitHub's authorize -> our callback -> the page
    assert browser.current_url == url + "/acme/secret"
    assert _by_css(browser, "h1").text == "acme/secret"
    assert _by_css(browser, ".who .login").text == "alice"
    _shot(browser, "private-after-login")
