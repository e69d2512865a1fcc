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
from typing import NamedTuple

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


SCREEN_PX = 736  # one screen of article at 1280 × 800: the window less the theme's header bar

# What a reader sees of a page as it loads, measured in the browser: the article's height, and
# the heights of the code inputs and tables that are shown (inside a closed <details>, a collapsed
# dropdown, or display:none, an element takes no height and is not counted). Tables nested in a
# table count once.
_COMPOSITION_JS = """
const article = document.querySelector('article.bd-article') || document.querySelector('main');
const shown = el => el.getClientRects().length > 0 && !el.closest('details:not([open])');
const height = sel => [...article.querySelectorAll(sel)]
  .filter(el => shown(el) && !el.parentElement.closest(sel))
  .reduce((sum, el) => sum + el.getBoundingClientRect().height, 0);
const figures = [...article.querySelectorAll('figure img, .sd-card img')].map(img => ({
  src: img.getAttribute('src'), natural: img.naturalWidth,
  drawn: img.getBoundingClientRect().width,
  link: (img.closest('a') || {getAttribute: () => null}).getAttribute('href')}));
return {article: article.getBoundingClientRect().height, code: height('div.cell_input'),
        tables: height('table'), figures: figures};
"""


class Composition(NamedTuple):
    """A page's composition as it loads (px of CSS at the window's width)."""

    article: float  # the article's height
    code: float  # the height of the code inputs shown
    tables: float  # the height of the tables shown
    figures: list[dict]  # per image: src, natural (px), drawn (px), link (href or None)

    @property
    def screens(self) -> float:
        """The article's height in screens of :data:`SCREEN_PX`."""
        return self.article / SCREEN_PX


def composition(session, page: Path) -> Composition:
    """Open a built page and measure what it shows (see :data:`_COMPOSITION_JS`)."""
    from selenium.webdriver.support.ui import WebDriverWait

    open_page(session, page)
    WebDriverWait(session, 30).until(lambda s: s.execute_script(
        "return [...document.images].every(i => i.complete)"))
    got = session.execute_script(_COMPOSITION_JS)
    return Composition(got["article"], got["code"], got["tables"], got["figures"])
