"""report.html in headless Chromium at 1400 px: nothing scrolls sideways, every chart loads.
The screenshot goes to RELQ_SCREENSHOTS when set (tests/browser.py): look at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from relq.pipeline import demo
from tests.browser import horizontal_overflow, screenshot  # the chromium fixture: tests/conftest.py


@pytest.fixture(scope="module")
def page(spark, tmp_path_factory) -> Path:
    """The demo's report: a synthetic archive of a week, through pipeline.demo."""
    out = tmp_path_factory.mktemp("page")
    paths = demo.run(20_000, out, spark=spark)
    assert (out / "archive").is_dir()
    return paths.html


def test_the_page_fits_1400_px_and_every_chart_loads(chromium, page, tmp_path) -> None:
    chromium.set_window_size(1400, 1000)
    chromium.get(page.resolve().as_uri())
    assert horizontal_overflow(chromium) == []
    images = chromium.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    assert [src for src, _, _ in images] == ["throughput.png", "hourly.png", "wait.png", "duration.png",
                                             "rates.png"]
    assert all(done and width > 300 for _, done, width in images), images
    tables = chromium.execute_script(
        "return Array.from(document.querySelectorAll('table')).map(t => t.getBoundingClientRect().right)")
    assert tables and max(tables) <= 1400
    text = chromium.find_element("tag name", "body").text
    assert "duration p99" in text and "(partial)" in text and "Why items failed or were retried" in text
    # pipeline.demo takes no --conn: the page names the command that reads a server's health
    assert "invoke pipeline.report --conn" in text and "pass --conn" not in text
    assert screenshot(chromium, tmp_path, "pipeline-report").stat().st_size > 50_000


def test_the_demo_refuses_no_rows(tmp_path) -> None:
    from relq.errors import RelqError

    with pytest.raises(RelqError, match="--rows must be 1 or more"):
        demo.run(0, tmp_path)
