"""The web page of `wikimem serve` shows a note as Obsidian does (issue 48, second half):
attachments served read-only under the page-read path rules, embeds of notes, headings and blocks
(depth-limited, cycles cut, hidden notes not shown), callouts, highlights, tasks, footnotes, math
as text, titles, plain-text hit snippets, home/folder/tag pages, superseded pages, and all of it
escaped."""
from __future__ import annotations

import os
import re

import pytest
from starlette.testclient import TestClient

from serve_helpers import free_port
from web_fixtures import EVIL_SVG, FILES, png
from wikimem.serve.app import Server, ServeConfig, plan, start_hosts
from wikimem.serve.tokens import TokenStore

PORT = free_port()


@pytest.fixture
def site(make_vault, tmp_path):
    """A TestClient over a served vault of FILES (built), its root, and a way to add files."""
    made = []

    def make(files=FILES, extra=None):
        root = make_vault({**files, **(extra or {})}, name="wiki")
        (tmp_path / "outside.png").write_bytes(png(2, 2, (1, 2, 3)))
        os.symlink(tmp_path / "outside.png", root / "attachments" / "out.png")
        os.symlink(root / ".obsidian", root / "attachments" / "dotlink")  # inside the vault, into a dot folder
        cfg = ServeConfig(port=PORT, rate=0.0)
        pairs, store, cfg = plan([], [f"wiki={root}"], cfg, TokenStore(tmp_path / "tokens.json"))
        hosts = start_hosts(pairs, watch=False, embedder="none")
        host = hosts["wiki"]
        assert host.session.ready.wait(30)
        host.vault.index(wait=10)
        server = Server(hosts, store, cfg)
        made.append(host)
        return TestClient(server.app(), base_url=f"http://127.0.0.1:{PORT}"), root, host
    yield make
    for host in made:
        host.stop()


def _article(html: str) -> str:
    found = re.search(r'<article id="content">(.*?)</article>', html, re.S)
    assert found, html[:500]
    return found.group(1)


# -- attachments -------------------------------------------------------------------------------------------
def test_attachments_are_served_read_only_with_their_type_and_nosniff(site):
    client, root, _ = site()
    with client:
        r = client.get("/v/wiki/file/attachments/logo.png")
        assert r.status_code == 200, r.text
        assert r.content == (root / "attachments/logo.png").read_bytes()
        assert r.headers["content-type"] == "image/png"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cross-origin-resource-policy"] == "same-origin"
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert client.get("/v/wiki/file/attachments/manual.pdf").headers["content-type"] == "application/pdf"
        assert client.get("/v/wiki/file/attachments/sound.mp3").headers["content-type"] == "audio/mpeg"
        # read-only: no method writes a file
        for method in ("put", "post", "delete"):
            assert getattr(client, method)("/v/wiki/file/attachments/logo.png").status_code == 405
        assert (root / "attachments/logo.png").read_bytes() == png(60, 40, (220, 30, 30))


def test_an_svg_is_served_as_an_image_only_never_as_a_page_that_runs_script(site):
    client, _, _ = site()
    with client:
        r = client.get("/v/wiki/file/attachments/evil.svg")
        assert r.status_code == 200 and r.text == EVIL_SVG
        assert r.headers["content-type"] == "image/svg+xml"
        assert r.headers["content-disposition"].startswith("attachment")
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script" not in csp and "sandbox" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        page = client.get("/v/wiki/page/notes/Gallery.md").text
        assert "<svg" not in page and "<script" not in page  # drawn through <img>, never inlined
        assert '<img class="embed-image" src="/v/wiki/file/attachments/evil.svg"' in page


@pytest.mark.parametrize("url,status,why", [
    ("/v/wiki/file/.obsidian/secret.png", 400, "dot folders"),
    ("/v/wiki/file/private/hidden.png", 400, ".wikimemignore"),
    ("/v/wiki/file/attachments/out.png", 400, "symlink"),  # a symlink leading out of the vault
    ("/v/wiki/file/attachments/dotlink/secret.png", 400, "dot folders"),  # a symlink into .obsidian
    ("/v/wiki/file/..%2Foutside.png", 400, "escapes the vault"),
    ("/v/wiki/file/attachments/%2E%2E/%2E%2E/outside.png", 400, "escapes the vault"),
    ("/v/wiki/file/attachments/notes.txt", 404, "not an attachment"),  # not a kind of file the page shows
    ("/v/wiki/file/notes/Gallery.md", 404, "not an attachment"),  # a note is a page, not a file
    ("/v/wiki/file/attachments/missing.png", 404, "no such file"),
])
def test_attachments_follow_the_page_read_path_rules(site, url, status, why):
    client, _, _ = site()
    with client:
        r = client.get(url)
        assert r.status_code == status, (url, r.status_code, r.text)
        assert not r.content.startswith(b"\x89PNG")
        assert why in r.json()["error"], r.text


def test_image_embeds_by_name_and_by_path_with_obsidians_size_syntax(site):
    client, _, _ = site()
    with client:
        body = _article(client.get("/v/wiki/page/notes/Gallery.md").text)
        assert '<img class="embed-image" src="/v/wiki/file/attachments/logo.png" alt="logo.png" width="200"' in body
        assert '<img class="embed-image" src="/v/wiki/file/attachments/logo.png" alt="the logo"' in body
        assert 'width="120" height="80"' in body
        assert '<audio class="embed-audio" controls preload="metadata" src="/v/wiki/file/attachments/sound.mp3"' in body
        assert '<a class="embed-file" href="/v/wiki/file/attachments/manual.pdf">' in body
        for src in re.findall(r'src="([^"]+)"', body):  # every drawn file is one the server gives
            assert client.get(src).status_code == 200, src


# -- embeds ---------------------------------------------------------------------------------------------------
def test_note_heading_and_block_embeds_are_drawn_inline(site):
    client, _, _ = site()
    with client:
        body = _article(client.get("/v/wiki/page/notes/Embeds.md").text)
        boxes = re.findall(r'<div class="embed" data-path="concepts/Source.md">(.*?)</div></div>', body, re.S)
        assert len(boxes) == 3, body
        whole, section, block = boxes
        assert "Intro of the source." in whole and "not in the details section" in whole
        assert "The embedded heading text." in section and "Intro of the source." not in section
        assert "not in the details section" not in section
        assert "A block paragraph worth quoting." in block and "The embedded heading text." not in block
        assert "^para1" not in body  # Obsidian hides block ids


def test_an_embedded_note_hidden_by_wikimemignore_is_not_shown(site):
    from wikimem.serve.render import render_note
    from wikimem.serve.site import VaultSite
    client, _, host = site()
    with client:
        body = _article(client.get("/v/wiki/page/notes/Embeds.md").text)
        assert "launch code" not in body and "4242" not in body
        assert "Secret Plan" in body  # named as a missing embed, not drawn
    # even when a name resolves to it: an embed reads through the page-read rules
    tricked = VaultSite(host)
    tricked.resolve = lambda target, source, relative=False: "private/Secret Plan.md"
    html = render_note("![[Secret Plan]]", tricked, "notes/X.md")
    assert "4242" not in html and "embed-missing" in html


def test_embed_cycles_are_cut_and_depth_is_limited(site):
    client, _, _ = site()
    with client:
        loop = _article(client.get("/v/wiki/page/notes/Loop A.md").text)
        assert loop.count("B says hi.") == 1 and loop.count("A says hi.") == 1
        assert 'class="embed-cut"' in loop
        deep = _article(client.get("/v/wiki/page/notes/Deep 1.md").text)
        assert "level two" in deep and "level four" in deep
        assert "level five" not in deep  # three embeds deep, then a link
        assert 'class="embed-cut"' in deep


# -- Obsidian's syntax ----------------------------------------------------------------------------------------
def test_callouts_highlights_tasks_footnotes_and_math(site):
    client, _, _ = site()
    with client:
        body = _article(client.get("/v/wiki/page/notes/Syntax.md").text)
        assert '<details class="callout callout-tip" data-callout="tip"><summary class="callout-title">Fold me</summary>' in body
        assert "Tip body text." in body and "[!tip]" not in body
        assert '<div class="callout callout-warning" data-callout="warning"><div class="callout-title">Careful now</div>' in body
        assert "<blockquote>\n<p>plain quote</p>" in body  # a plain quote stays a quote
        assert "<mark>highlighted words</mark>" in body and "==" not in body
        assert '<li class="task"><input type="checkbox" class="task-box" disabled data-task=" "> open task' in body
        assert '<li class="task done"><input type="checkbox" class="task-box" disabled checked' in body
        assert '<a href="#fn1" id="fnref1">[1]</a>' in body and '<li id="fn1"><p>The footnote\'s source. <a href="#fnref1"' in body
        assert "[^src]" not in body and "inline footnote text" in body
        assert '<span class="math" title="TeX">a_b_c</span>' in body  # not turned into emphasis
        assert '<div class="math math-block" title="TeX">\\sum_i x_i</div>' in body


def test_the_title_is_frontmatter_then_first_h1_then_the_file_name(site):
    client, _, _ = site()
    with client:
        untitled = client.get("/v/wiki/page/notes/Untitled thoughts.md").text
        assert '<h1 class="page-title">Untitled thoughts</h1>' in untitled
        titled = client.get("/v/wiki/page/notes/Titled.md").text
        assert '<h1 class="page-title">Fancy Title</h1>' in titled and "<title>Fancy Title · wikimem</title>" in titled
        own = client.get("/v/wiki/page/concepts/Source.md").text
        assert 'class="page-title"' not in own and own.count("<h1") == 1  # its H1 is its title, shown once


def test_titles_callout_titles_and_svg_stay_escaped(site):
    client, _, _ = site()
    with client:
        r = client.get("/v/wiki/page/notes/Evil Title.md")
        assert r.status_code == 200
        assert "<script" not in r.text and "<img src=x" not in r.text and "onerror=\"window" not in r.text
        assert "&lt;script&gt;window.pwned=6&lt;/script&gt;" in r.text
        assert '<div class="callout-title">&lt;img src=x onerror=&quot;window.pwned=7&quot;&gt; Boom</div>' in r.text
        assert "script-src" not in r.headers["content-security-policy"]


# -- browsing -----------------------------------------------------------------------------------------------
def test_search_snippets_are_plain_text(site):
    client, _, _ = site()
    with client:
        html = client.get("/v/wiki/", params={"q": "mango price"}).text
        snippet = re.search(r'<div class="hit">.*?<p>(.*?)</p>', html, re.S).group(1)
        assert "mango" in snippet
        assert "|" not in snippet and "---" not in snippet and "##" not in snippet


def test_home_without_a_home_note_is_the_folder_tree_with_counts(site):
    client, _, _ = site()
    with client:
        html = client.get("/v/wiki/").text
        tree = re.search(r'<ul class="tree" id="folders">(.*?)</ul>\s*<h2', html, re.S).group(1)
        assert '<a href="/v/wiki/folder/projects">projects</a> <span class="count">3</span>' in tree
        assert '<a href="/v/wiki/folder/projects/alpha">alpha</a> <span class="count">2</span>' in tree
        assert '<a href="/v/wiki/folder/notes">notes</a>' in tree
        assert "private" not in tree
        assert '<a href="/v/wiki/tag/design">#design</a>' in html
        assert 'id="recent"' in html


def test_home_is_the_vaults_home_note_when_it_has_one(site):
    client, _, _ = site(extra={"Home.md": "# Welcome home\n\nStart with [[Source]] and ==this==.\n"})
    with client:
        html = client.get("/v/wiki/").text
        body = _article(html)
        assert "Welcome home" in body and '<a class="wikilink" href="/v/wiki/page/concepts/Source.md">' in body
        assert "<mark>this</mark>" in body
        assert 'id="folders"' in html  # the tree is still there to browse


def test_folder_and_tag_pages(site):
    client, _, _ = site()
    with client:
        top = client.get("/v/wiki/folder/projects").text
        assert '<a href="/v/wiki/folder/projects/alpha">alpha/</a> <span class="count">2</span>' in top
        assert '<a href="/v/wiki/folder/projects/beta">beta/</a> <span class="count">1</span>' in top
        alpha = client.get("/v/wiki/folder/projects/alpha").text
        assert 'href="/v/wiki/page/projects/alpha/Spec.md">Spec</a>' in alpha
        assert 'href="/v/wiki/page/projects/alpha/Notes.md">Alpha Notes</a>' in alpha
        assert client.get("/v/wiki/folder/nowhere").status_code == 404
        assert client.get("/v/wiki/folder/private").status_code == 404  # ignored: no notes there
        assert client.get("/v/wiki/folder/..%2F..").status_code == 400
        tag = client.get("/v/wiki/tag/design").text
        assert "Spec" in tag and "Alpha Notes" in tag and "Beta Plan" not in tag  # nested tags count
        assert "Alpha Notes" in client.get("/v/wiki/tag/design/ui").text
        assert '<p class="meta">2 pages' in tag
        assert '<p class="meta">1 page ' in client.get("/v/wiki/tag/design/ui").text  # not "1 pages"


def test_a_superseded_page_links_to_what_replaced_it(site):
    client, _, _ = site()
    with client:
        old = client.get("/v/wiki/page/notes/Old Plan.md").text
        banner = re.search(r'<p class="superseded" id="superseded">(.*?)</p>', old, re.S)
        assert banner and 'href="/v/wiki/page/notes/New%20Plan.md">New Plan</a>' in banner.group(1)
        assert 'id="superseded"' not in client.get("/v/wiki/page/notes/New Plan.md").text


# -- the renderer on its own ------------------------------------------------------------------------------------
class _Notes:
    """A ``render.Site`` over a dict of notes (no server): names resolve to ``NAME.md``."""
    vault = "v"

    def __init__(self, notes: dict[str, str]):
        self.notes = notes

    def resolve(self, target, source, relative=False):
        target = target.strip()
        return target + ".md" if target + ".md" in self.notes else (target if target in self.notes else None)

    def read(self, path):
        from wikimem.errors import UsageError
        if path not in self.notes:
            raise UsageError(f"{path}: no such note")
        return path[:-3], self.notes[path]


def test_one_page_draws_at_most_max_embeds_notes_however_they_fan_out():
    from wikimem.serve.render import MAX_EMBEDS, render_note
    fan = "\n\n".join(f"![[Leaf {i}]]" for i in range(10))
    notes = {"Top.md": "\n\n".join("![[Mid]]" for _ in range(10)), "Mid.md": fan}
    notes.update({f"Leaf {i}.md": f"leaf {i} text" for i in range(10)})
    html = render_note(notes["Top.md"], _Notes(notes), "Top.md")
    assert html.count('<div class="embed"') == MAX_EMBEDS  # 10 x 11 asked for
    assert 'title="too many embeds in one page: not drawn"' in html


def test_a_wikilink_with_an_escaped_pipe_in_a_table_cell():
    from wikimem.serve.render import render_note
    html = render_note("| a | b |\n|---|---|\n| [[Leaf\\|shown]] | x |\n", _Notes({"Leaf.md": "leaf"}), "T.md")
    assert '<a class="wikilink" href="/v/v/page/Leaf.md">shown</a>' in html and "<td> x </td>" not in html


def test_a_heading_embed_matches_the_heading_as_obsidian_does():
    from wikimem.serve.render import render_note
    notes = {"FAQ.md": "# FAQ\n\n## What is it?\n\nIt is a wiki.\n\n## `hasTag()`\n\nA function.\n\n## Next\n\nno\n"}
    html = render_note("![[FAQ#What is it]]\n\n![[FAQ#hasTag]]", _Notes(notes), "T.md")
    assert "It is a wiki." in html and "A function." in html and "no</p>" not in html
    assert "embed-missing" not in html


def test_attachments_need_the_token_the_page_needs(make_vault, tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    token = store.add("ann", "wiki", "read")
    other = store.add("bob", "elsewhere", "read")
    root = make_vault(FILES, name="wiki")
    cfg = ServeConfig(port=PORT, rate=0.0)
    pairs, store, cfg = plan([], [f"wiki={root}"], cfg, store)
    hosts = start_hosts(pairs, watch=False, embedder="none")
    try:
        assert hosts["wiki"].session.ready.wait(30)
        client = TestClient(Server(hosts, store, cfg).app(), base_url=f"http://127.0.0.1:{PORT}")
        with client:
            url = "/v/wiki/file/attachments/logo.png"
            assert client.get(url).status_code == 401
            assert client.get(url, headers={"Authorization": f"Bearer {other}"}).status_code == 404
            r = client.get(url, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200 and r.content.startswith(b"\x89PNG")
            client.cookies.set("wikimem_token", token)  # the web page's sign-in cookie draws its images
            assert client.get(url).status_code == 200
    finally:
        for host in hosts.values():
            host.stop()


def test_an_attachment_added_while_serving_is_drawn_after_the_next_build(site):
    client, root, host = site()
    with client:
        assert 'class="embed-image"' not in client.get("/v/wiki/page/notes/Heading Only.md").text
        (root / "attachments" / "deep" / "later.png").parent.mkdir()
        (root / "attachments" / "deep" / "later.png").write_bytes(png(3, 3, (0, 0, 255)))
        (root / "notes" / "Heading Only.md").write_text("# Heading Only\n\n![[later.png]]\n")
        host.vault.index(wait=10)  # what the watcher does on the event
        body = _article(client.get("/v/wiki/page/notes/Heading Only.md").text)
        assert 'src="/v/wiki/file/attachments/deep/later.png"' in body
