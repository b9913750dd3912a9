"""The page checks themselves: a check that cannot see overflow would pass every page."""

from __future__ import annotations

from pathlib import Path

from tests.browser import horizontal_overflow, screenshot


def test_overflow_is_seen_and_a_fitting_page_is_clean(chromium, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<!doctype html><body><p>fits</p><div id='wide' style='width:2000px'>wide</div></body>")
    chromium.get(page.as_uri())
    assert any("2000" in problem or "ends at" in problem for problem in horizontal_overflow(chromium))

    page.write_text(
        "<!doctype html><body><p>fits</p><div style='overflow-x:auto'><table><tr>"
        + "<td>cell</td>" * 400
        + "</tr></table></div></body>"
    )
    chromium.get(page.as_uri())
    assert any(problem.startswith("div.") for problem in horizontal_overflow(chromium))

    page.write_text("<!doctype html><body><p>fits</p></body>")
    chromium.get(page.as_uri())
    assert horizontal_overflow(chromium) == []
    assert screenshot(chromium, tmp_path, "fits").stat().st_size > 0
