"""Headless Chromium for the book tests: Debian's chromium and chromedriver, driven by selenium.

Nothing is downloaded: the browser and its driver are the Debian packages (``.ci/run`` installs
them as root); selenium is given both paths, so its driver manager never runs. Where they are
missing the browser tests skip, except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = ("chromium", "chromium-browser")
WINDOW = (1280, 900)  # a reader's laptop window


def chromium_paths() -> tuple[str, str]:
    """(browser, driver) paths; skip, or fail in CI, when either is missing."""
    browser = next((p for name in CHROMIUM if (p := shutil.which(name))), None)
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    why = ("headless Chromium is missing: apt-get install -y chromium chromium-driver "
           "(.ci/run does it as root)")
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


@contextmanager
def chromium(window: tuple[int, int] = WINDOW):
    """A headless Chromium session (selenium WebDriver), closed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window[0]},{window[1]}", "--allow-file-access-from-files"):
        options.add_argument(arg)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        yield session
    finally:
        session.quit()


def open_page(session, page: Path, wait_for: str | None = None, timeout: float = 30):
    """Load a built page from disk (file://), optionally waiting for a CSS selector."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    session.get(Path(page).resolve().as_uri())
    if wait_for:
        WebDriverWait(session, timeout).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, wait_for)))
    return session


def pick_in_pane(session, pane: int, value: str) -> None:
    """Click ``value`` in the ``pane``-th search pane (DataTables SearchPanes) of the page."""
    from selenium.webdriver.common.by import By

    panes = session.find_elements(By.CSS_SELECTOR, "div.dtsp-searchPane")
    names = panes[pane].find_elements(By.CSS_SELECTOR, "tbody tr")
    match = [row for row in names
             if row.find_element(By.CSS_SELECTOR, ".dtsp-name").text.strip() == value]
    if not match:
        shown = [r.text for r in names]
        raise AssertionError(f"pane {pane} has no entry {value!r}; it shows {shown}")
    match[0].click()


def shown_rows(session, table_id: str) -> list[list[str]]:
    """The text of each cell of the rows the table shows now (the current page)."""
    from selenium.webdriver.common.by import By

    rows = session.find_elements(By.CSS_SELECTOR, f"table#{table_id} > tbody > tr")
    return [[td.text for td in row.find_elements(By.CSS_SELECTOR, "td")] for row in rows]
