"""A web page of another site, in a real headless Chromium, cannot write to a wikimem serve on
loopback without tokens (issue 48): neither from a sandboxed iframe (``Origin: null``) nor from its
own origin (another port), with a ``text/plain`` body (a "simple" request, sent without asking) or
a form. Chromium, chromedriver and selenium as for test_web_browser.py."""
from __future__ import annotations

import http.server
import os
import shutil
import threading
import time

import pytest

from serve_helpers import NONE_EMBEDDER, free_port, live_server
from wikimem.serve.tokens import TokenStore

REQUIRED = os.environ.get("WIKIMEM_REQUIRE_BROWSER") == "1"  # read at import: the autouse fixture clears WIKIMEM_*
FILES = {"SCHEMA.md": "# Schema\n", ".wikimem.toml": NONE_EMBEDDER, "concepts/Alpha.md": "# Alpha\n\nalpha\n"}


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver_path = shutil.which("chromedriver") or next((p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
                                                        if os.path.exists(p)), None)
    if webdriver is None or binary is None or driver_path is None:
        (pytest.fail if REQUIRED else pytest.skip)("browser tests need Chromium, chromedriver and selenium")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _attacker_page(target: str) -> bytes:
    body = "JSON.stringify({path: 'notes/PATH.md', content: '# Pwned\\\\n'})"
    send = ("fetch('" + target + "/v1/vaults/wiki/write', {method: 'POST', mode: 'no-cors', "
            "headers: {'Content-Type': 'text/plain'}, body: " + body + "})"
            ".then(() => parent.postMessage('sent PATH', '*'), () => parent.postMessage('failed PATH', '*'));")
    frame = send.replace("PATH", "FromSandbox").replace("'", "&#39;")
    # the listener first: the sandboxed frame's answer can arrive before a script after it has run
    page = f"""<!doctype html><title>cat pictures</title>
<script>
window.done = [];
window.addEventListener('message', e => window.done.push(e.data));
</script>
<iframe sandbox="allow-scripts" srcdoc="<script>{frame}</script>"></iframe>
<form id="f" method="post" action="{target}/v1/vaults/wiki/write" enctype="text/plain" target="sink">
<input name='{{"path": "notes/FromForm.md", "content": "# Pwned", "x": "' value='"}}'></form>
<iframe name="sink"></iframe>
<script>
{send.replace("parent.postMessage", "window.postMessage").replace("PATH", "FromPage")}
document.getElementById('f').submit();
</script>"""
    return page.encode()


@pytest.fixture
def attacker():
    """Another site: a page on another loopback port, set up by the test."""
    pages: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = pages.get(self.path, b"")
            self.send_response(200 if data else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}", pages
    server.shutdown()
    server.server_close()


def test_a_page_of_another_site_cannot_write_to_a_loopback_server(browser, attacker, make_vault, tmp_path):
    root = make_vault(FILES, name="wiki")
    site, pages = attacker
    with live_server([("wiki", root)], TokenStore(tmp_path / "tokens.json")) as (url, _server):
        pages["/"] = _attacker_page(url)
        browser.get(site + "/")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # both fetches went out (no-cors: the answer is opaque either way)
            done = browser.execute_script("return window.done || []")
            if len(done) >= 2:
                break
            time.sleep(0.1)
        assert len(done) >= 2, done
        time.sleep(1.0)  # the form's POST as well
        written = sorted(p.name for p in (root / "notes").glob("*.md")) if (root / "notes").exists() else []
    assert written == [], written
