"""What a source page says about a source, all extractive: its text as Markdown (HTML converted
with html2text, PDF text with pypdf when installed), title, date, outline, first paragraph and
key terms. No model is involved, so ingest works offline and gives the same page every time.
"""
from __future__ import annotations

import io
import re
from html import unescape
from collections import Counter
from dataclasses import dataclass

from ..errors import WikimemError
from ..stores.analysis import STOP_WORDS, stem
from ..parse import parse_page
from ..vault.files import clean_text

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]", re.UNICODE)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
_HTML_DATE = re.compile(r'<meta[^>]+(?:name|property)=["\'](?:date|article:published_time|dc\.date)["\'][^>]*'
                        r'content=["\']([^"\']+)', re.I)
_LINK = re.compile(r"!?\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]|!?\[([^\]]*)\]\([^)]*\)")


@dataclass(frozen=True)
class Extract:
    markdown: str  # the text the page is built from (the file itself for Markdown)
    title: str
    date: str | None
    outline: tuple[tuple[int, str], ...]  # (level, heading)
    first_paragraph: str
    key_terms: tuple[str, ...]


def html_to_markdown(html: str) -> str:
    """The page's own content (``webpage.page_content``: no navigation, header, footer, sidebars) as
    Markdown."""
    import html2text

    from .webpage import page_content

    conv = html2text.HTML2Text()
    conv.body_width = 0  # no hard wrapping: keep paragraphs on one line
    conv.ignore_images = False
    conv.single_line_break = False
    return conv.handle(page_content(html)).strip() + "\n"


def pdf_to_text(data: bytes, name: str) -> tuple[str, str | None]:
    """The PDF's text and its metadata title (None when it has none that means anything)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise WikimemError(f"{name}: reading PDF text needs the optional extra: pip install 'wikimem[pdf]'") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise WikimemError(f"{name}: not a readable PDF ({exc})") from None
    try:
        meta = reader.metadata
        title = pdf_title(str(meta.title)) if meta is not None and meta.title else None
    except Exception:  # noqa: BLE001 - a broken Info dictionary only costs the title
        title = None
    return "\n\n".join(p for p in pages if p) + "\n", title


# A PDF's /Title is often what the authoring tool left there, not the document's title.
_JUNK_TITLE = re.compile(r"^(untitled\b.*|no title|title|document\d*|doc\d*|slide \d+|presentation\d*|"
                         r"(microsoft )?(word|powerpoint|excel)( - .*)?|.* - (microsoft )?(word|powerpoint|excel))$",
                         re.I)
_FILE_NAME = re.compile(r"(^|[\\/])[^\\/]*\.(docx?|pdf|tex|dvi|ps|eps|rtf|odt|odp|pptx?|xlsx?|txt|md|html?|indd|"
                        r"pages|key|qxd|ai)$|^[a-z]:\\|^/|^~/", re.I)


def pdf_title(value: str) -> str | None:
    """``value`` (a PDF's /Title) tidied, or None when it is no title: empty, "untitled", the
    authoring tool's "Microsoft Word - x.docx", a file name or path, no letters."""
    title = " ".join(value.replace("\x00", "").split())
    if sum(c.isalpha() for c in title) < 2 or _JUNK_TITLE.match(title) or _FILE_NAME.search(title):
        return None
    return title


def heading_line(text: str, look: int = 5) -> str | None:
    """The first heading-like line among the first ``look`` lines of extracted PDF text: short,
    mostly letters, not a sentence (no closing full stop), not a page number or a running date."""
    seen = 0
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        seen += 1
        if seen > look:
            break
        letters = sum(c.isalpha() for c in line)
        words = line.split()
        if (len(line) > 120 or letters < 3 or letters < len(line.replace(" ", "")) / 2 or len(words) > 16
                or line.endswith((".", ",", ";", ":")) and not line.endswith("...")):
            continue
        return line
    return None


def plain(text: str) -> str:
    """Markdown inline syntax -> readable text: links show their label, emphasis marks go."""
    text = _LINK.sub(lambda m: m.group(2) or m.group(1) or m.group(3) or "", text)
    text = re.sub(r"(\*\*|__|\*|_)(\S.*?\S|\S)\1", r"\2", text)
    return " ".join(text.split())


def key_terms(text: str, limit: int = 10) -> tuple[str, ...]:
    """The most frequent content words (and Chinese words), shown as written most often."""
    counts: Counter[str] = Counter()
    shown: dict[str, Counter[str]] = {}
    body = re.sub(r"```.*?```", " ", text, flags=re.S)
    for m in _WORD.finditer(plain(body)):
        word = m.group(0)
        if _HAN.search(word):
            from rjieba import cut

            parts = [w for w in cut(word) if len(w) >= 2 and _HAN.search(w) and w not in STOP_WORDS]
        else:
            parts = [word] if len(word) >= 4 and word.lower() not in STOP_WORDS else []
        for part in parts:
            key = stem(part.lower())
            counts[key] += 1
            shown.setdefault(key, Counter())[part] += 1
    ranked = sorted((k for k, n in counts.items() if n >= 2), key=lambda k: (-counts[k], k))
    return tuple(shown[k].most_common(1)[0][0] for k in ranked[:limit])


def decode_text(data: bytes) -> str:
    """A text source's bytes as text: UTF-16 or UTF-32 when a byte-order mark says so (Windows
    tools write them), else UTF-8 (a BOM dropped, bad bytes replaced). NUL and other control
    characters but tab and line breaks are dropped: a note holding them is skipped as binary."""
    for bom, codec in ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
                       (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            text = data.decode(codec, errors="replace")
            break
    else:
        text = data.decode("utf-8-sig", errors="replace")
    return clean_text(text)


def extract(name: str, data: bytes, suffix: str) -> Extract:
    """``name``: the file name (for the fallback title and errors). The title is the document's
    own: frontmatter ``title``, else the first ``# `` heading; for HTML then ``<title>``; for PDF the
    metadata title when it means something, then (PDF and plain text) the first heading-like line; else
    the file name."""
    stem = name.rsplit(".", 1)[0]
    date = None
    doc_title = None  # <title> of a web page, /Title of a PDF
    pdf_text = False
    if suffix in (".html", ".htm"):
        html = decode_text(data)
        markdown = html_to_markdown(html)
        m = _HTML_TITLE.search(html)
        doc_title = " ".join(unescape(_TAG.sub("", m.group(1))).split()) if m else None
        d = _HTML_DATE.search(html)
        date = d.group(1)[:10] if d else None
    elif suffix == ".pdf":
        (markdown, doc_title), pdf_text = pdf_to_text(data, name), True
    else:
        markdown = decode_text(data).replace("\r\n", "\n")
    page = parse_page(f"raw/{name}", markdown)
    front = page.frontmatter.data
    h1 = next((plain(h.text) for h in page.headings if h.level == 1 and plain(h.text)), None)
    front_title = front.get("title") if isinstance(front.get("title"), (str, int, float)) else None
    title = " ".join(str(front_title or "").split()) or h1 or doc_title
    if not title and (pdf_text or suffix == ".txt"):  # plain text has no markup: its first heading-like line
        title = heading_line(markdown)
    title = title or " ".join(stem.replace("-", " ").replace("_", " ").split()) or stem
    date = str(front.get("date") or front.get("created") or date or "") or None
    outline = tuple((h.level, h.text) for h in page.headings)
    return Extract(markdown, title, date[:10] if date else None, outline, first_paragraph(page.body),
                   key_terms(page.body))


def first_paragraph(body: str, limit: int = 600) -> str:
    """The first paragraph of prose (not a heading, list, table, quote marker or code)."""
    in_fence = False
    for block in re.split(r"\n\s*\n", body):
        lines = [l for l in block.strip().splitlines()]
        if not lines:
            continue
        if lines[0].lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence if block.count("```") % 2 else in_fence
            continue
        if in_fence or lines[0].startswith(("#", "|", "- ", "* ", "![", "<", "---")):
            continue
        text = plain(" ".join(l.lstrip("> ") for l in lines))
        if len(text) < 20:
            continue
        return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return ""
