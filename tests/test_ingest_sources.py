"""Issue 26 item 13: what ingest makes of an article, a web page and a PDF -- the text without the
site's navigation chrome, raw/ sources' own links left out of link lint, a title from the document
itself, the wiki pages a source names in an ordinary Obsidian vault -- and `init` making sources/."""
import io

import pytest

from wikimem.api import init_vault, open_vault
from wikimem.ingest.extract import extract, html_to_markdown

from conftest import write_vault


@pytest.fixture
def vault(tmp_path):
    init_vault(tmp_path / "v")
    return open_vault(tmp_path / "v", embedder="none")


# -- 1. HTML chrome, and raw/ links in lint ------------------------------------------------------
PAGE = """<!doctype html><html><head><title>Rank fusion | The Blog</title></head><body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header"><h1><a href="/">The Blog</a></h1><nav><a href="/about">About</a>
<a href="/blog/">Archive</a></nav></header>
<div role="navigation"><a href="/tags">Tags</a></div>
<div role="banner"><a href="/subscribe">Subscribe</a></div>
<main id="main"><article>
<h1>Reciprocal rank fusion</h1>
<p>RRF sums 1/(k+rank) over the rankings; see the <a href="/posts/bm25">BM25 post</a> and
<a href="https://example.org/rrf">the paper</a>.</p>
<img src="/img/rrf.png" alt="fusion diagram">
<h2>Why it works</h2><p>It needs no score calibration between the rankers.</p>
</article></main>
<aside><a href="/related">Related posts</a></aside>
<div role="contentinfo"><a href="/imprint">Imprint</a></div>
<footer><a href="/privacy">Privacy</a></footer>
</body></html>"""


def test_html_chrome_is_dropped_and_main_is_kept():
    md = html_to_markdown(PAGE)
    for chrome in ("Skip to content", "About", "Archive", "Tags", "Subscribe", "Related posts", "Imprint",
                   "Privacy", "The Blog", "](/)"):
        assert chrome not in md, (chrome, md)
    assert md.startswith("# Reciprocal rank fusion")
    assert "## Why it works" in md and "It needs no score calibration" in md
    assert "[the paper](https://example.org/rrf)" in md


def test_html_without_main_keeps_the_body_minus_chrome():
    md = html_to_markdown("<html><body><nav><a href='/'>Home</a></nav><h1>Plain page</h1>"
                          "<p>Body text that stays.</p><footer>(c) someone</footer></body></html>")
    assert "Home" not in md and "(c) someone" not in md
    assert "# Plain page" in md and "Body text that stays." in md


def test_html_several_articles_and_a_header_inside_an_article_are_kept():
    md = html_to_markdown("<body><nav>Menu</nav><article><header><h1>First post</h1></header><p>One.</p>"
                          "</article><article><h2>Second post</h2><p>Two.</p></article></body>")
    assert "Menu" not in md
    assert "# First post" in md and "One." in md and "## Second post" in md and "Two." in md


def test_html_title_is_the_pages_own_heading_not_the_sites(vault, tmp_path):
    src = tmp_path / "rrf.html"
    src.write_text(PAGE, encoding="utf-8")
    item = vault.ingest([src]).items[0]
    assert item.page == "sources/Reciprocal rank fusion (source).md"


def test_html_title_falls_back_to_the_title_element_unescaped():
    info = extract("x.html", b"<html><head><title> Tom &amp; Jerry&#39;s\n notes </title></head>"
                             b"<body><p>No heading in this page at all, only a paragraph.</p></body></html>", ".html")
    assert info.title == "Tom & Jerry's notes"


def test_lint_leaves_raw_sources_own_links_alone(vault, tmp_path):
    src = tmp_path / "rrf.html"
    src.write_text(PAGE, encoding="utf-8")
    vault.ingest([src])
    write_vault(vault.root, {
        "raw/articles/clipped.md": "# Clipped\n\nSee [[Their Page]], [their home](/) and ![x](/img/a.png).\n",
        "concepts/Fusion.md": "# Fusion\n\nSee [[No Such Page]] and [[raw/articles/rrf.html]].\n",
        "raw/articles/orphan.md": ("---\ntitle: Orphan\ntype: source\n"
                                   "derived_from: '[[raw/articles/gone.html]]'\n---\ntext\n"),
    })
    report = vault.lint(select=["WM1"])
    found = sorted((f.path, f.code, f.message) for f in report.findings)
    assert found == [("concepts/Fusion.md", "WM101", "link to missing page [[No Such Page]]"),
                     ("raw/articles/orphan.md", "WM105", "raw source [[raw/articles/gone.html]] does not exist")]


# -- 2. the pages a source names ------------------------------------------------------------------
def _plain_vault(root):
    write_vault(root, {
        "Projects/Leiden algorithm.md": "# Leiden algorithm\n\nCommunity detection.\n",
        "People/Vincent Traag.md": "---\naliases: [V. A. Traag]\n---\nA researcher.\n",
        "Reading/Fusion notes.md": "---\ntitle: Reciprocal Rank Fusion\naliases: [RRF]\n---\nNotes.\n",
        "Home.md": "# Home\n\nStart here.\n",
        "Notes.md": "Loose notes.\n",
        "AI.md": "Artificial intelligence.\n",
        "Go.md": "The language.\n",
        "queries/What is Leiden.md": "---\ntype: query\n---\nanswer\n",
        "memories/Louvain fact.md": "---\ntype: memory\ntitle: Louvain\n---\nfact\n",
        "raw/articles/Modularity.md": "# Modularity\n\nsource text\n",
    })


def _mentions(page_text):
    lines = page_text.split("## Mentions\n\n", 1)
    return lines[1].split("\n", 1)[0].split(" · ") if len(lines) == 2 else []


def test_source_page_names_plain_notes_by_title_and_alias(vault, tmp_path):
    _plain_vault(vault.root)
    src = tmp_path / "clip.md"
    src.write_text("# Communities and ranking\n\nThe LEIDEN ALGORITHM of v. a. traag refines Louvain and "
                   "modularity. Go back Home to read your notes. AI is everywhere; ai too. Fusion notes aside, "
                   "RRF was used, then RRF again. What is Leiden? Leidenalgorithms are not a match.\n",
                   encoding="utf-8")
    item = vault.ingest([src]).items[0]
    text = (vault.root / item.page).read_text(encoding="utf-8")
    assert sorted(_mentions(text)) == ["[[Fusion notes|Reciprocal Rank Fusion]]", "[[Leiden algorithm]]",
                                       "[[Vincent Traag]]"]
    assert vault.lint([item.page], select=["WM10"]).findings == []  # every link resolves, none is ambiguous


def test_short_and_common_titles_need_more_than_a_bare_word(vault, tmp_path):
    _plain_vault(vault.root)
    src = tmp_path / "clip.md"
    src.write_text("# On AI\n\nAI systems rank. AI systems fuse. See [[Home]] and [Go](Go.md). "
                   "My notes are loose.\n", encoding="utf-8")
    item = vault.ingest([src]).items[0]
    names = _mentions((vault.root / item.page).read_text(encoding="utf-8"))
    assert sorted(names) == ["[[AI]]", "[[Go]]", "[[Home]]"]  # AI: written as the page writes it, twice


def test_mentions_are_capped_most_named_first(vault, tmp_path):
    write_vault(vault.root, {f"Topics/Topic{i:02d}.md": f"# Topic{i:02d}\n\nx\n" for i in range(40)})
    src = tmp_path / "many.md"
    src.write_text("# Many\n\n" + " ".join(f"Topic{i:02d}" for i in range(40)) + " Topic39 Topic39 Topic38.\n",
                   encoding="utf-8")
    item = vault.ingest([src]).items[0]
    names = _mentions((vault.root / item.page).read_text(encoding="utf-8"))
    assert len(names) == 20 and names[:2] == ["[[Topic39]]", "[[Topic38]]"]


def test_same_file_name_in_two_folders_links_by_path_and_chinese_names_match(vault, tmp_path):
    write_vault(vault.root, {"Ideas/Okapi.md": "# Okapi\n\nx\n", "Old/Okapi.md": "# Okapi\n\ny\n",
                             "概念/向量检索.md": "# 向量检索\n\n内容\n"})
    src = tmp_path / "clip.md"
    src.write_text("# Clip\n\nThe Okapi system. 我们讨论向量检索的方法。\n", encoding="utf-8")
    item = vault.ingest([src]).items[0]
    names = _mentions((vault.root / item.page).read_text(encoding="utf-8"))
    assert sorted(names) == ["[[Ideas/Okapi|Okapi]]", "[[Old/Okapi|Okapi]]", "[[向量检索]]"]


def test_llm_names_link_plain_notes_and_never_index_md(vault, tmp_path, monkeypatch):
    """The LLM summary's "Names" line had the same narrow page set (and linked [[title]], broken
    when the title is not the file name): it linked index.md's "Index" and missed nothing else."""
    import json

    from wikimem.ingest import summary

    _plain_vault(vault.root)
    reply = {"summary": "About fusion.", "entities": ["Index", "Log", "Vincent Traag"], "concepts": ["RRF"]}
    monkeypatch.setattr(summary, "complete", lambda *a, **k: json.dumps(reply))
    src = tmp_path / "clip.md"
    src.write_text("# Fusion\n\nText about fusion and ranking.\n", encoding="utf-8")
    item = vault.ingest([src], llm="ollama", llm_model="m", llm_timeout=1.0).items[0]
    text = (vault.root / item.page).read_text(encoding="utf-8")
    assert "Names: [[Vincent Traag]] · [[Fusion notes|Reciprocal Rank Fusion]]\n" in text, text
    assert "Candidates for new pages: Index, Log" in text


# -- 3. titles ------------------------------------------------------------------------------------
def _pdf(lines, title=None):
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    ops = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
    ops += ["(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") Tj T*" for line in lines]
    stream = DecodedStreamObject()
    stream.set_data("\n".join(ops + ["ET"]).encode("latin-1"))
    page[NameObject("/Contents")] = writer._add_object(stream)
    if title is not None:
        writer.add_metadata({"/Title": title})
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


BODY = ["Leiden guarantees connected communities. The refinement phase splits them when needed."]


@pytest.mark.parametrize("meta, lines, expected", [
    ("From Louvain to Leiden: guaranteeing well-connected communities", ["1", "Some heading"] + BODY,
     "From Louvain to Leiden: guaranteeing well-connected communities"),
    ("Microsoft Word - draft3.docx", ["Community detection with Leiden"] + BODY, "Community detection with Leiden"),
    ("untitled", ["Community detection with Leiden"] + BODY, "Community detection with Leiden"),
    ("  ", ["Community detection with Leiden"] + BODY, "Community detection with Leiden"),
    ("paper-final_v2.pdf", ["Community detection with Leiden"] + BODY, "Community detection with Leiden"),
    ("C:\\Users\\ana\\thesis.tex", ["Community detection with Leiden"] + BODY, "Community detection with Leiden"),
    (None, ["3", "arXiv preprint", "Community detection with Leiden"] + BODY, "arXiv preprint"),
    (None, BODY, "leiden note 2019"),  # a sentence is not a heading: the file name
    (None, [], "leiden note 2019"),
])
def test_pdf_title(meta, lines, expected):
    info = extract("leiden_note-2019.pdf", _pdf(lines or [""], meta), ".pdf")
    assert info.title == expected


def test_pdf_title_names_the_source_page(vault, tmp_path):
    src = tmp_path / "scan0042.pdf"
    src.write_bytes(_pdf(["Community detection with Leiden"] + BODY, "Microsoft Word - x.docx"))
    item = vault.ingest([src]).items[0]
    assert item.page == "sources/Community detection with Leiden (source).md"
    text_note = (vault.root / "raw/papers/scan0042.md").read_text(encoding="utf-8")
    assert "title: Community detection with Leiden" in text_note


def test_pdf_title_helper_rejects_junk():
    from wikimem.ingest.extract import pdf_title

    for junk in ("", "Untitled", "Untitled-1", "untitled document", "Microsoft PowerPoint - deck.pptx", "x.docx",
                 "/home/ana/out.pdf", "1", "--", "Document1"):
        assert pdf_title(junk) is None, junk
    assert pdf_title("  Okapi   BM25 at TREC-3 ") == "Okapi BM25 at TREC-3"


@pytest.mark.parametrize("text, expected", [
    ("---\ntitle: Front title\n---\n# Heading\n\nbody\n", "Front title"),
    ("Intro line.\n\n# The **real** heading\n\nbody\n", "The real heading"),
    ("# [[Leiden]] and [Louvain](l.md)\n\nbody\n", "Leiden and Louvain"),
    ("## Only a second-level heading\n\nbody\n", "my clip"),
])
def test_markdown_title(text, expected):
    assert extract("my_clip.md", text.encode(), ".md").title == expected


# -- 4. init makes sources/ -----------------------------------------------------------------------
def test_init_creates_sources_folder(tmp_path):
    report = init_vault(tmp_path / "v")
    assert "sources/" in report.created and (tmp_path / "v" / "sources").is_dir()
    assert "sources/" in init_vault(tmp_path / "v").existing
