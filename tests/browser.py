"""Headless Chromium for the tests that look at a page (the pipeline's report, the dashboard).

Debian's ``chromium`` and ``chromium-driver`` packages provide the browser and its driver;
``.ci/run`` installs them. Where they are missing, the tests that need them skip with one line.
Selenium is told both paths, so it never tries to download a browser or a driver.

Screenshots go to ``RELQ_SCREENSHOTS`` (a folder) when it is set, else to the test's tmp_path:
set it to look at what the tests saw.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

INSTALL = "install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"

# The flags a closed network needs: without the background-networking ones Chromium keeps
# trying to reach Google's hosts.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium_paths() -> tuple[str, str] | None:
    """The browser and driver, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the session, 1400 x 1000 px; skips when it is not installed."""
    paths = chromium_paths()
    if paths is None:
        pytest.skip(f"no headless Chromium: {INSTALL}")
    webdriver = pytest.importorskip("selenium.webdriver", reason="no selenium: pip install -e '.[dev]'")
    browser, driver_path = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    profile = tempfile.mkdtemp(prefix="relq-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, folder: Path, name: str) -> Path:
    """Save the whole page as ``name``.png in RELQ_SCREENSHOTS, or in ``folder``."""
    target = Path(os.environ.get("RELQ_SCREENSHOTS") or folder)
    target.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(1000, min(int(height) + 120, 12000)))
    path = target / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1400, 1000)
    return path


def horizontal_overflow(driver: Any) -> list[str]:
    """Elements wider than the page (their tag, class and widths); empty when nothing scrolls sideways."""
    return driver.execute_script(
        """
        const width = document.documentElement.clientWidth;
        const out = [];
        if (document.documentElement.scrollWidth > width)
            out.push(`page: ${document.documentElement.scrollWidth} > ${width}`);
        for (const el of document.querySelectorAll('body *')) {
            const name = `${el.tagName.toLowerCase()}.${el.className}`;
            if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible')
                out.push(`${name}: ${el.scrollWidth} > ${el.clientWidth}`);
            const box = el.getBoundingClientRect();
            if (box.right > width + 1) out.push(`${name} ends at ${box.right}`);
        }
        return out;
        """
    )
