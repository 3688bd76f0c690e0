"""The web page of wikimem serve in a real headless Chromium (issue 37 item 6): search, open a hit,
follow a wikilink, see an edit made on disk after a reload, sign in with a token kept out of
scripts' reach, and a note holding <script> and <img onerror> runs nothing.

Needs Debian's ``chromium`` and ``chromium-driver`` and ``pip install selenium``. Without them these
tests skip, saying so; ``.ci/run`` installs them and sets WIKIMEM_REQUIRE_BROWSER=1, which turns a
skip into a failure.
"""
from __future__ import annotations

import os
import shutil
import time

import pytest

from serve_helpers import NONE_EMBEDDER, live_server
from wikimem.serve.tokens import TokenStore

REQUIRED = os.environ.get("WIKIMEM_REQUIRE_BROWSER") == "1"  # read at import: the autouse fixture clears WIKIMEM_*
HOW = ("browser tests need Chromium, its driver and selenium: apt-get install chromium chromium-driver && "
       "pip install selenium (bash .ci/run does both)")
FILES = {"SCHEMA.md": "# Schema\n", ".wikimem.toml": NONE_EMBEDDER,
         "concepts/Leiden Algorithm.md": "# Leiden Algorithm\n\nThe Leiden algorithm finds communities; it refines "
                                         "[[Louvain Method|Louvain]].\n\n## Phases\n\nLocal moving, refinement, aggregation.\n",
         "concepts/Louvain Method.md": "# Louvain Method\n\nGreedy modularity optimisation from 2008.\n",
         "notes/Evil.md": "# Evil note\n\n<script>window.pwned = 1; alert('script')</script>\n\n"
                          "<img src=\"x\" onerror=\"window.pwned = 2; alert('img')\">\n\n[click me](javascript:alert(3))\n"}


@pytest.fixture(scope="module")
def browser():
    problem = None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        problem = "selenium is not installed"
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver_path = shutil.which("chromedriver") or next((p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
                                                        if os.path.exists(p)), None)
    if problem is None and (binary is None or driver_path is None):
        problem = "chromium or chromedriver is not installed"
    if problem:
        if REQUIRED:
            pytest.fail(f"{problem}; {HOW}")
        pytest.skip(f"{problem}; {HOW}")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def site(make_vault, tmp_path):
    root = make_vault(FILES, name="wiki")
    with live_server([("wiki", root)], TokenStore(tmp_path / "tokens.json")) as (url, server):
        yield url, root, server


def _text_when(driver, by, value, want, timeout: float = 10.0) -> str:
    """The element's text once it contains ``want``: after a click the old page's element can still
    be found (and then go stale) before the new page has loaded."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        try:
            text = driver.find_element(by, value).text
            if want in text:
                return text
        except (NoSuchElementException, StaleElementReferenceException):
            pass
        time.sleep(0.05)
    return text


def _no_alert(driver) -> bool:
    from selenium.common.exceptions import NoAlertPresentException
    try:
        driver.switch_to.alert.dismiss()
        return False
    except NoAlertPresentException:
        return True


def test_search_open_a_hit_follow_a_wikilink_and_see_an_edit_after_reload(browser, site):
    from selenium.webdriver.common.by import By
    url, root, _ = site
    browser.get(url + "/")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("leiden communities")
    box.submit()
    assert "Leiden Algorithm" in _text_when(browser, By.CSS_SELECTOR, "#hits .hit-title", "Leiden Algorithm")
    first = browser.find_element(By.CSS_SELECTOR, "#hits .hit-title")
    first.click()
    assert "The Leiden algorithm finds communities" in _text_when(browser, By.ID, "content",
                                                                  "The Leiden algorithm finds communities")
    link = browser.find_element(By.CSS_SELECTOR, "#content a.wikilink")
    assert link.text == "Louvain"
    link.click()
    assert _text_when(browser, By.TAG_NAME, "h1", "Louvain Method") == "Louvain Method"
    backlinks = browser.find_element(By.ID, "backlinks").text
    assert "Leiden Algorithm" in backlinks
    (root / "concepts/Louvain Method.md").write_text("# Louvain Method\n\nEdited on disk just now.\n")
    time.sleep(0.2)
    browser.refresh()
    assert "Edited on disk just now." in _text_when(browser, By.ID, "content", "Edited on disk just now.")
    browser.get(url + "/v/wiki/?q=" + "edited%20on%20disk")
    deadline = time.monotonic() + 10  # the watcher indexes the edit
    while "Louvain Method" not in browser.find_element(By.ID, "hits").text and time.monotonic() < deadline:
        time.sleep(0.3)
        browser.refresh()
    assert "Louvain Method" in browser.find_element(By.ID, "hits").text


def test_a_note_with_script_and_img_onerror_runs_nothing(browser, site):
    from selenium.webdriver.common.by import By
    url, _, _ = site
    browser.get(url + "/v/wiki/page/notes/Evil.md")
    time.sleep(0.5)  # an onerror would have fired by now
    assert _no_alert(browser)
    assert browser.execute_script("return window.pwned === undefined")
    text = browser.find_element(By.ID, "content").text
    assert "<script>" in text and "onerror" in text  # shown as text
    assert browser.find_elements(By.CSS_SELECTOR, "#content script, #content img") == []
    browser.find_element(By.LINK_TEXT, "click me").click() if browser.find_elements(By.LINK_TEXT, "click me") else None
    assert _no_alert(browser)


def test_sign_in_with_a_token_kept_in_an_httponly_cookie(browser, make_vault, tmp_path):
    from selenium.webdriver.common.by import By
    store = TokenStore(tmp_path / "tokens.json")
    token = store.add("ann", "wiki", "read")
    root = make_vault(FILES, name="wiki")
    with live_server([("wiki", root)], store) as (url, _server):
        browser.delete_all_cookies()
        browser.get(url + "/v/wiki/")
        assert browser.current_url.endswith("/login")
        browser.find_element(By.NAME, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        assert _text_when(browser, By.TAG_NAME, "h1", "wiki") == "wiki"
        assert browser.execute_script("return document.cookie") == ""  # HttpOnly: no script can read it
        browser.get(url + "/v/wiki/?q=louvain")
        assert "Louvain Method" in browser.find_element(By.ID, "hits").text
        browser.get(url + "/logout")
        browser.get(url + "/v/wiki/")
        assert browser.current_url.endswith("/login")
