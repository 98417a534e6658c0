"""Headless Chromium for the map tests: Debian's ``chromium`` and ``chromium-driver``
packages driven by selenium, which is told where the driver is so that it never downloads
a browser. Locally the tests skip when chromium is absent; under CI=true they fail."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)


def _first(names: tuple[str, ...]) -> str | None:
    for n in names:
        found = shutil.which(n) or (f"/usr/lib/chromium/{n}" if n == "chromedriver" else None)
        if found and os.path.exists(found):
            return found
    return None


def start_browser(width: int = 1400, height: int = 900) -> Any:
    """A headless Chrome WebDriver, or a skip (locally) / failure (CI) naming what is missing."""
    browser, driver = _first(BROWSERS), _first(DRIVERS)
    if browser is None or driver is None:
        missing = "chromium" if browser is None else "chromedriver (chromium-driver)"
        why = f"{missing} is not installed (apt-get install -y chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(f"CI=true but {why}; .ci/run installs it")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    drv = start_browser()
    try:
        yield drv
    finally:
        drv.quit()
