"""wikimem ingest: conversation importers (golden notes), content-addressed raw/ storage, source
pages, refusals that leave nothing behind."""
import hashlib
import json
import shutil

import pytest
from typer.testing import CliRunner

from wikimem.api import init_vault, open_vault
from wikimem.cli import app
from wikimem.ingest.conversations import note_path, read_export
from wikimem.ingest.transcript import session_note
from wikimem.parse import chunk_transcript, parse_page

from conftest import FIXTURES, golden

FIX = FIXTURES / "ingest"
runner = CliRunner()


def _export(name):
    parsed = read_export(FIX / name)
    return {"format": parsed.format,
            "notes": {note_path(s): session_note(s) for s in parsed.sessions},
            "problems": [[p.where, p.reason] for p in parsed.problems]}


@pytest.mark.parametrize("name", ["claude-session.jsonl", "claude-empty.jsonl", "chatgpt-conversations.json",
                                  "chatgpt-truncated.json", "chat.md", "not-a-chat.md"])
def test_importer_golden(name):
    golden("ingest_" + name.replace(".", "_").replace("-", "_"), _export(name))


def test_claude_code_session_keeps_tool_turns_and_reports_the_truncated_line():
    data = _export("claude-session.jsonl")
    [(rel, text)] = data["notes"].items()
    assert rel == "raw/transcripts/2025-07-14 The test test_parse_date fails on 2025-03-30 (DST… 5f0c1e2a.md"
    assert data["problems"] == [["claude-session.jsonl:9", data["problems"][0][1]]]
    assert "truncated" in data["problems"][0][1]
    assert '[tool call: Read] {"file_path": "/home/ana/proj/dates.py"}' in text
    assert "**Tool** (2025-07-14 09:12:20): [tool result, error]\n1 failed, 11 passed ^t7" in text
    assert "Café ☕ 日期解析" in text and "🎉" in text
    assert "The user wants me to look" not in text  # private thinking is not a turn
    assert "local-command-caveat" not in text  # isMeta bookkeeping is not a turn
    page = parse_page(rel, text)
    assert page.frontmatter.data["session_id"] == "5f0c1e2a-9b7d-4c1e-8a2b-3c4d5e6f7a8b"
    assert page.frontmatter.data["started"] == "2025-07-14T09:12:03"
    assert page.frontmatter.data["summary"] == "Fix the flaky date parser test"
    assert page.frontmatter.data["participants"] == ["User", "Assistant", "Tool"]
    assert [c.blocks for c in chunk_transcript(page, 1, 1, 0)] == [(f"t{i}",) for i in range(1, 9)]


def test_chatgpt_follows_the_current_branch_only():
    data = _export("chatgpt-conversations.json")
    notes = list(data["notes"].values())
    assert len(notes) == 2
    branchy = next(t for t in notes if "Sourdough" in t)
    assert "rye starter kept in the fridge" in branchy and "Once a week" in branchy
    assert "How often should I feed a starter?" not in branchy and "Once a day" not in branchy
    uni = next(t for t in notes if "正则" in t)
    assert "```python\nre.compile" in uni and "**Tool python**" in uni and "[image: image file-abc]" in uni
    reasons = dict(data["problems"])
    assert "not in the message tree" in reasons["chatgpt-conversations.json#3 (Broken tree)"]
    assert "no messages" in reasons["chatgpt-conversations.json#4 (Empty chat)"]


def test_truncated_chatgpt_export_keeps_the_complete_conversations():
    data = _export("chatgpt-truncated.json")
    assert len(data["notes"]) == 1 and "truncated" in data["problems"][0][1]


@pytest.fixture
def vault(tmp_path):
    init_vault(tmp_path / "v")
    return open_vault(tmp_path / "v", embedder="none")


def _raw_files(v):
    return sorted(p.relative_to(v.root).as_posix() for p in (v.root / "raw").rglob("*") if p.is_file())


def test_reimporting_an_export_adds_only_new_sessions(vault, tmp_path):
    first = vault.ingest([FIX / "chatgpt-truncated.json"], kind="transcript")
    [item] = first.items
    assert item.status == "added" and len(item.raw) == 1 and item.problems
    second = vault.ingest([FIX / "chatgpt-conversations.json"], kind="transcript")
    [item] = second.items
    assert len(item.raw) == 1 and "正则" in item.raw[0]  # the sourdough session was there already
    assert item.unchanged and "Sourdough" in item.unchanged[0]
    third = vault.ingest([FIX / "chatgpt-conversations.json"])  # kind guessed from the export
    assert third.items[0].status == "unchanged" and third.items[0].raw == ()
    assert len([p for p in _raw_files(vault) if p.startswith("raw/transcripts/")]) == 2
    log = (vault.root / "log.md").read_text(encoding="utf-8")
    assert log.count("· ingest ·") == 2


def test_a_session_with_a_secret_is_not_imported(vault, tmp_path):
    chat = tmp_path / "leak.txt"
    chat.write_text("Ana: my key is AKIAIOSFODNN7EXAMPLQ and the secret aws_secret_access_key = "
                    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY1\nBo: thanks\n", encoding="utf-8")
    report = vault.ingest([chat], kind="transcript")
    assert not report.ok and report.items[0].problems
    assert "secret" in report.items[0].problems[0].reason
    assert _raw_files(vault) == []


def test_same_bytes_twice_is_a_noop_and_a_name_clash_gets_the_hash(vault, tmp_path):
    a = tmp_path / "notes.md"
    a.write_bytes(b"# Okapi notes\r\n\r\nThe Okapi system ranked documents with BM25.\r\n")
    first = vault.ingest([a]).items[0]
    assert first.status == "added" and first.raw == ("raw/articles/notes.md",)
    assert (vault.root / "raw/articles/notes.md").read_bytes() == a.read_bytes()  # unchanged, CRLF kept
    copy = tmp_path / "elsewhere.md"
    shutil.copy(a, copy)
    again = vault.ingest([copy]).items[0]
    assert again.status == "unchanged" and "already in the vault as raw/articles/notes.md" in again.message
    other = tmp_path / "sub" / "notes.md"
    other.parent.mkdir()
    other.write_text("# Other notes\n\nDifferent words entirely, about Leiden.\n")
    third = vault.ingest([other]).items[0]
    digest = hashlib.sha256(other.read_bytes()).hexdigest()[:8]
    assert third.raw == (f"raw/articles/notes-{digest}.md",)
    assert _raw_files(vault) == sorted(["raw/articles/notes.md", f"raw/articles/notes-{digest}.md"])


def test_source_page_is_extractive_and_listed(vault, tmp_path):
    src = tmp_path / "leiden.md"
    src.write_text("---\ndate: 2019-03-26\n---\n# From Louvain to Leiden\n\nThe Louvain algorithm can yield "
                   "badly connected communities. Leiden guarantees connected communities.\n\n## Refinement\n\n"
                   "Leiden refines communities. Refinement keeps communities connected.\n", encoding="utf-8")
    item = vault.ingest([src]).items[0]
    assert item.page == "sources/From Louvain to Leiden (source).md"
    page = vault.parse_file(item.page)
    raw_sha = hashlib.sha256((vault.root / "raw/articles/leiden.md").read_bytes()).hexdigest()
    # the file as it was summarised: `wikimem review` tells when it changes
    assert page.type == "source" and page.frontmatter.data["sources"] == [f"[[raw/articles/leiden.md]] sha256:{raw_sha}"]
    assert page.frontmatter.data["date"] == "2019-03-26"
    assert "communities" in [t.lower() for t in page.frontmatter.data["key_terms"]]
    assert "> The Louvain algorithm can yield badly connected communities." in page.body
    assert "  - Refinement" in page.body
    index = (vault.root / "index.md").read_text(encoding="utf-8")
    assert "## Sources" in index and "From Louvain to Leiden" in index
    assert "· ingest · sources/From Louvain to Leiden (source).md" in (vault.root / "log.md").read_text()


def test_html_is_kept_and_converted(vault, tmp_path):
    html = tmp_path / "page.html"
    html.write_text("<html><head><title>Rank fusion</title><meta name='date' content='2009-07-19'></head><body>"
                    "<h1>Reciprocal rank fusion</h1><p>RRF sums <b>1/(k+rank)</b> over the rankings, "
                    "with k = 60.</p><h2>Why</h2><p>It needs no score calibration.</p></body></html>")
    item = vault.ingest([html]).items[0]
    assert item.raw == ("raw/articles/page.html", "raw/articles/page.md")
    assert (vault.root / "raw/articles/page.html").read_bytes() == html.read_bytes()
    md = (vault.root / "raw/articles/page.md").read_text(encoding="utf-8")
    assert "# Reciprocal rank fusion" in md and "## Why" in md and "derived_from" in md
    page = vault.parse_file(item.page)
    assert page.frontmatter.data["date"] == "2009-07-19"
    assert [e.split(" sha256:")[0] for e in page.frontmatter.data["sources"]] == \
        ["[[raw/articles/page.html]]", "[[raw/articles/page.md]]"]


def test_an_image_is_an_asset(vault, tmp_path):
    png = tmp_path / "graph.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    item = vault.ingest([png]).items[0]
    assert item.kind == "asset" and item.raw == ("raw/assets/graph.png",) and item.page is None
    assert (vault.root / "raw/assets/graph.png").read_bytes() == png.read_bytes()
    assert "· ingest · raw/assets/graph.png" in (vault.root / "log.md").read_text()


def test_refused_and_failed_ingests_leave_nothing_behind(vault, tmp_path):
    secret = tmp_path / "creds.md"
    secret.write_text("# Creds\n\nThe deploy key is AKIAZ7VRSQ5TJN2DOE4B.\n")
    bad_pdf = tmp_path / "broken.pdf"
    bad_pdf.write_bytes(b"%PDF-1.4 this is not really a pdf")
    odd = tmp_path / "data.xyz"
    odd.write_bytes(b"???")
    report = vault.ingest([secret, bad_pdf, odd, tmp_path / "missing.md"])
    assert [i.status for i in report.items] == ["failed"] * 4 and not report.ok
    assert "secret" in report.items[0].message
    assert "PDF" in report.items[1].message or "pdf" in report.items[1].message
    assert "--kind" in report.items[2].message and "no such file" in report.items[3].message
    assert _raw_files(vault) == [] and list((vault.root / "sources").iterdir()) == []
    leftovers = [p for p in vault.root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_ingest_never_writes_over_raw(vault, tmp_path, monkeypatch):
    """A file that appears under the chosen name between the check and the rename is not replaced."""
    from wikimem.vault import safe_write

    src = tmp_path / "a.png"
    src.write_bytes(b"\x89PNG new")
    target = vault.root / "raw/assets/a.png"
    real = safe_write._check

    def racing(fd, name, expected_sha256, rel):  # the file appears after the last check, before the link
        real(fd, name, expected_sha256, rel)
        if name == "a.png" and not target.exists():
            target.write_bytes(b"someone else's")

    monkeypatch.setattr(safe_write, "_check", racing)
    item = vault.ingest([src]).items[0]
    assert item.status == "failed" and ("refusing to overwrite" in item.message or "already exists" in item.message)
    assert target.read_bytes() == b"someone else's"
    assert [p.name for p in target.parent.iterdir()] == ["a.png"]


def test_cli_ingest_json_and_exit_codes(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    env = {"WIKIMEM_EMBEDDER": "none"}
    ok = runner.invoke(app, ["ingest", str(FIX / "chat.md"), "--kind", "transcript", "-V", str(root), "--json"], env=env)
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["ok"] and data["items"][0]["status"] == "added"
    bad = runner.invoke(app, ["ingest", str(FIX / "claude-empty.jsonl"), "-V", str(root)], env=env)
    assert bad.exit_code == 1 and "no user or assistant turns" in bad.output and "Traceback" not in bad.output
    usage = runner.invoke(app, ["ingest", str(FIX / "chat.md"), "--kind", "poem", "-V", str(root)], env=env)
    assert usage.exit_code == 2 and "unknown kind" in usage.output


def test_pdf_text_is_extracted_beside_the_original(vault):
    pdf = FIX / "leiden-note.pdf"
    item = vault.ingest([pdf]).items[0]
    assert item.kind == "paper" and item.raw == ("raw/papers/leiden-note.pdf", "raw/papers/leiden-note.md")
    assert (vault.root / "raw/papers/leiden-note.pdf").read_bytes() == pdf.read_bytes()
    text = (vault.root / "raw/papers/leiden-note.md").read_text(encoding="utf-8")
    assert "Leiden guarantees connected communities." in text
    page = vault.parse_file(item.page)
    assert "> Leiden guarantees connected communities. The refinement phase splits communities." in page.body


def test_pdf_without_pypdf_is_refused_with_the_hint(vault, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pypdf(name, *args, **kwargs):
        if name == "pypdf" or name.startswith("pypdf."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pypdf)
    item = vault.ingest([FIX / "leiden-note.pdf"]).items[0]
    assert item.status == "failed" and "wikimem[pdf]" in item.message
    assert _raw_files(vault) == []


def test_chat_text_speakers_times_and_continuation_lines():
    [session] = read_export(FIX / "chat.md").sessions
    assert session.title == "Planning the reading group" and session.participants == ("Ana", "Bo")
    assert [(t.speaker, t.time) for t in session.turns] == [("Ana", "18:02"), ("Bo", "18:03"), ("Ana", None),
                                                             ("Bo", None)]
    assert session.turns[1].text == "Yes. I can present the refinement phase.\nIt is the part that guarantees connected communities."


def test_an_interrupted_ingest_is_completed_by_the_next_one(vault, tmp_path):
    """The raw copy landed but the source page did not (a crash between the two writes): ingesting
    the same file again writes the missing page instead of saying there is nothing to do."""
    src = tmp_path / "tea.md"
    src.write_text("# Tea\n\nGreen tea is steeped at 80 degrees for two minutes.\n", encoding="utf-8")
    vault.files.create_note("raw/articles/tea.md", src.read_text(encoding="utf-8"))
    item = vault.ingest([src]).items[0]
    assert item.status == "added" and item.raw == ("raw/articles/tea.md",) and item.page == "sources/Tea (source).md"
    assert "[[raw/articles/tea.md]]" in (vault.root / item.page).read_text(encoding="utf-8")
    assert vault.ingest([src]).items[0].status == "unchanged"
    assert _raw_files(vault) == ["raw/articles/tea.md"]


def test_a_folder_stands_for_its_files(vault, tmp_path):
    folder = tmp_path / "clips"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nFirst clipping about ranking functions.\n", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("Second clipping, about community detection.\n", encoding="utf-8")
    (folder / ".hidden.md").write_text("# Hidden\n\nnot ingested\n", encoding="utf-8")
    report = vault.ingest([folder])
    assert [i.status for i in report.items] == ["added", "added"]
    assert _raw_files(vault) == ["raw/articles/a.md", "raw/articles/b.txt"]


def test_a_grown_session_gets_its_new_turns_as_a_continuation(vault, tmp_path):
    """A Claude Code log still in use: the first import saw four lines, the next sees them all."""
    lines = (FIX / "claude-session.jsonl").read_text(encoding="utf-8").splitlines()
    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(lines[2:5]) + "\n", encoding="utf-8")  # user, assistant (text + tool call), result
    [first] = vault.ingest([log]).items[0].raw
    assert "^t4" in (vault.root / first).read_text(encoding="utf-8")
    log.write_text("\n".join(lines[:8]) + "\n", encoding="utf-8")  # + the summary line and four more turns
    item = vault.ingest([log]).items[0]
    assert item.status == "added" and "1 continued" in item.message
    [part] = item.raw
    assert part == first[:-3] + " (part 2).md"
    text = (vault.root / part).read_text(encoding="utf-8")
    assert f'continues: "[[{first[:-3]}]]"' in text or f"continues: '[[{first[:-3]}]]'" in text
    assert "^t5" in text and "^t8" in text and "^t4" not in text and "Let me read the parser" not in text
    assert vault.ingest([log]).items[0].status == "unchanged"
    assert (vault.root / first).read_text(encoding="utf-8").count("^t") == 4  # the first note never changes


def test_two_ingests_of_one_file_at_once_add_one_copy(vault, tmp_path, monkeypatch):
    """The other ingest lands the same bytes under the same name between our look-up and our write."""
    from wikimem.vault import safe_write

    src = tmp_path / "a.png"
    src.write_bytes(b"\x89PNG same bytes")
    target = vault.root / "raw/assets/a.png"
    real = safe_write._check

    def racing(fd, name, expected_sha256, rel):
        real(fd, name, expected_sha256, rel)
        if name == "a.png" and not target.exists():
            target.write_bytes(src.read_bytes())  # the other process wins

    monkeypatch.setattr(safe_write, "_check", racing)
    item = vault.ingest([src]).items[0]
    assert item.status == "unchanged" and "added meanwhile" in item.message
    assert _raw_files(vault) == ["raw/assets/a.png"]


def test_a_near_copy_of_a_source_is_reported_and_superseded_on_request(tmp_path, monkeypatch):
    """The writer's conflict check runs on ingest's source pages: a second source with nearly the
    same text is reported as similar to the first one's page, and --supersede marks that page replaced."""
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    body = ("BM25 ranks documents for a keyword query by term frequency and inverse document frequency. "
            "The parameter k1 controls term-frequency saturation; b controls length normalisation, usually 0.75.\n")
    first, second = tmp_path / "okapi.md", tmp_path / "okapi-v2.md"
    first.write_text(f"# Okapi BM25 notes\n\n{body}", encoding="utf-8")
    second.write_text(f"# Okapi BM25 notes, revised\n\n{body}Robertson and Spärck Jones developed it.\n", encoding="utf-8")
    root = tmp_path / "vault"
    init_vault(root)
    v = open_vault(root)
    one = v.ingest([first]).items[0]
    two = v.ingest([second]).items[0]
    assert [p for p, _ in two.similar] == [one.page]
    assert v.read_page(one.page)["frontmatter"].get("status", "active") == "active"  # reported, not applied

    third = tmp_path / "okapi-v3.md"
    third.write_text(f"# Okapi BM25 notes, third\n\n{body}Robertson and Spärck Jones developed it in the 1990s.\n",
                     encoding="utf-8")
    result = CliRunner().invoke(app, ["ingest", str(third), "--vault", str(root), "--supersede", "--json"])
    assert result.exit_code == 0, result.output
    item = json.loads(result.output)["items"][0]
    old = item["similar"][0]["path"]
    assert f"supersedes {old}" in item["message"]
    assert v.read_page(old)["frontmatter"]["status"] == "superseded"


def test_a_text_file_is_titled_by_its_first_heading_like_line():
    # Was: titled from its file name ("notes 2026")
    from wikimem.ingest.extract import extract
    assert extract("notes-2026.txt", b"Quarterly planning notes\n\nWe met on Monday.\n", ".txt").title == \
        "Quarterly planning notes"
    assert extract("notes-2026.txt", b"We met on Monday and agreed to ship.\n", ".txt").title == "notes 2026"
