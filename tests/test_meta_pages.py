"""Issue 26 item 10: wikimem's own pages (index.md, log.md, communities.md) are not hits of default
search, answers or prime; a flag brings them back; one fact ingested comes back once."""
import json

from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.search.fusion import repeat_key, repeats

FACT = "The zorblax protocol retries every request three times with exponential backoff before failing."


def _vault(make_vault):
    return make_vault({
        "SCHEMA.md": "# Schema\n",
        "index.md": "# Index\n\n- [[Zorblax]]: the zorblax protocol and its retries\n",
        "log.md": "# Log\n\n## [2026-01-01] query | zorblax protocol retries\n",
        "communities.md": "# Communities\n\n## Zorblax\nMembers: [[Zorblax]], zorblax protocol retries\n",
        "concepts/Zorblax.md": "# Zorblax\n\nThe zorblax protocol is a made-up protocol with retries.\n",
        "raw/articles/zorblax.md": f"# Zorblax notes\n\n{FACT}\n",
        "sources/Zorblax notes (source).md": f"---\ntype: source\n---\n# Zorblax notes\n\n## First paragraph\n\n{FACT}\n\n"
                                           "## Key terms\nzorblax, retries\n",
    })


def test_meta_pages_are_left_out_of_default_search_and_brought_back_by_a_flag(make_vault):
    root = _vault(make_vault)
    v = open_vault(root, embedder="fake")
    v.index()
    paths = [h.path for h in v.search("zorblax protocol retries", limit=10).hits]
    assert paths and not {"index.md", "log.md", "communities.md"} & set(paths)
    again = [h.path for h in v.search("zorblax protocol retries", limit=10, include_meta=True).hits]
    assert {"index.md", "log.md", "communities.md"} <= set(again)
    lexical = [h.path for h in v.search("zorblax", mode="lexical", limit=10, folder=None, type=None).hits]
    assert "index.md" not in lexical
    narrowed = [h.path for h in v.search("zorblax", limit=10, since="2000-01-01").hits]  # the narrowing SQL path
    assert "index.md" not in narrowed


def test_one_fact_comes_back_once(make_vault):
    root = _vault(make_vault)
    v = open_vault(root, embedder="fake")
    v.index()
    hits = v.search("zorblax retries every request three times exponential backoff", limit=10).hits
    with_fact = [h.path for h in hits if "exponential backoff" in h.text]
    assert len(with_fact) == 1, with_fact
    assert len(hits) >= 2  # the other pages still come


def test_answers_and_the_cli_leave_meta_pages_out(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = _vault(make_vault)
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(root)]).exit_code == 0
    out = runner.invoke(app, ["search", "zorblax protocol", "-V", str(root), "--json"])
    assert "communities.md" not in [h["path"] for h in json.loads(out.output)["hits"]]
    back = runner.invoke(app, ["search", "zorblax protocol", "-V", str(root), "--json", "--include-meta"])
    assert "communities.md" in [h["path"] for h in json.loads(back.output)["hits"]]
    v = open_vault(root, embedder="fake")
    answer = v.query("what is the zorblax protocol", write=False)
    cited = json.dumps(answer.to_dict() if hasattr(answer, "to_dict") else str(answer), ensure_ascii=False)
    assert "communities" not in cited and "index.md" not in cited


def test_repeat_key_ignores_case_marks_and_headings_but_not_short_texts():
    para = "The zorblax protocol retries every request three times with exponential backoff."
    raw = repeat_key(f"# Notes\n\n**{para.upper()}**\n\nAnd a second paragraph of the raw file, long enough.\n")
    quoted = repeat_key(f"# Source\n\n## First paragraph\n\n{para}\n\n## Key terms\nzorblax\n")
    other = repeat_key("# Other\n\nA different page about the zorblax protocol and its many retries, said in quite other words.\n")
    assert repeats(quoted, raw) and repeats(raw, quoted) and not repeats(other, raw)
    assert repeat_key("# Short heading\n\nA line.\n") is None


OPTION = ("The save-dev option saves installed packages to the devDependencies section of the manifest, "
          "and it can be set in the user configuration file as well.")


def test_repeated_sections_do_not_leave_a_search_short_of_its_limit(make_vault):
    """Eight pages quote one option's section word for word (npm's manual does this): the search still
    returns the ten hits asked for, one per page, each text once; a page whose best chunk repeats a
    better hit is shown by its other chunk."""
    intro = "It talks to the registry, reads the manifest and the lock file, and prints what it did. " * 4
    files = {f"commands/cmd{i}.md": f"# Command {i}\n\nCommand {i} does thing number {i} with the zorblax widget. "
                                    f"{intro}\n\n## save-dev\n\n{OPTION} {intro}\n" for i in range(8)}
    files.update({f"notes/other{i}.md": f"# Other {i}\n\nA note about the zorblax widget, number {i}, and "
                                        f"nothing about options.\n" for i in range(8)})
    v = open_vault(make_vault(files), embedder="fake")
    v.index()
    hits = v.search("save-dev option devDependencies zorblax widget", limit=10).hits
    assert len(hits) == 10
    assert len({h.path for h in hits}) == 10
    assert sum(OPTION[:40] in h.text for h in hits) == 1
    commands = [h for h in hits if h.path.startswith("commands/")]
    assert len(commands) >= 2  # the other command pages come by their own paragraph, not hidden by the repeat
