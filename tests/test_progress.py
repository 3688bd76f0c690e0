"""Issue 25 item 3: progress everywhere. Off a terminal a line every few seconds (done/total, rate,
time left) goes to stderr; --quiet silences it. Was: nothing for 22 minutes when not a terminal."""
import io
import json

from typer.testing import CliRunner

from wikimem.cli import app
from wikimem.progress import LineProgress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_lines_come_at_the_start_every_few_seconds_and_at_the_end():
    out, clock = io.StringIO(), Clock()
    progress = LineProgress(out, every=5.0, clock=clock)
    progress("embedding", 0, 100)
    for done in range(1, 101):
        clock.now += 0.5  # 2 texts a second
        progress("embedding", done, 100)
    progress("embedding", 100, 100)  # said once, not twice
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding: 100 to do"
    assert lines[1] == "embedding: 10/100 (10%), 2.0/s, 45 s left"
    assert lines[-1] == "embedding: 100/100 (100%), 2.0/s, 50 s"
    assert len(lines) == 1 + 10 + 0  # one a 5 s, the last of them at the end


def test_times_left_read_like_a_person_wrote_them():
    assert LineProgress.line("embedding", 10, 7210, 10.0).endswith("2 h 00 min left")
    assert LineProgress.line("parsing", 1, 91, 1.0).endswith("1 min 30 s left")


def _vault(make_vault):
    return make_vault({f"n{i}.md": f"# Note {i}\n\nSome words about topic {i}.\n" for i in range(5)})


def test_index_off_a_terminal_prints_progress_lines_and_quiet_silences_them(make_vault, monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    runner = CliRunner()
    shown = runner.invoke(app, ["index", str(_vault(make_vault))])
    assert shown.exit_code == 0 and "embedding: " in shown.stderr and "/s" in shown.stderr
    quiet = runner.invoke(app, ["index", str(_vault(make_vault).parent / "vault"), "--rebuild", "--quiet"])
    assert quiet.exit_code == 0 and "embedding: " not in quiet.stderr
    globally = runner.invoke(app, ["-q", "index", str(_vault(make_vault).parent / "vault"), "--rebuild"])
    assert globally.exit_code == 0 and "embedding: " not in globally.stderr
    as_json = runner.invoke(app, ["index", str(_vault(make_vault).parent / "vault"), "--rebuild", "--json"])
    assert "embedding: " not in as_json.stderr and json.loads(as_json.stdout)["coverage"] == 1.0


def test_a_stage_first_heard_of_mid_way_gives_no_rate_then_counts_from_there():
    """Was: the first line of a stage reported after its start read "parsing: 199/364 (55%), 0.0/s"."""
    import io

    from wikimem.progress import LineProgress
    out, now = io.StringIO(), [0.0]
    progress = LineProgress(out, every=5, clock=lambda: now[0])
    progress("parsing", 199, 364)
    now[0] = 10.0
    progress("parsing", 299, 364)
    first, second = out.getvalue().splitlines()
    assert first == "parsing: 199/364 (55%)"
    assert second.startswith("parsing: 299/364 (82%), 10.0/s")  # 100 in 10 s, not 299 in 10 s


def test_a_build_shows_the_searched_vectors_then_the_note_passages_and_when_search_was_complete(make_vault):
    """A first build embeds what search scans (chunks) before a note's held passages, which only
    re-rank; the display says so as two stages and the report says when the first ended."""
    from wikimem.api import open_vault
    items = "\n\n".join(f"- step {i}: run the {w} command\n\n`{w} --all`" for i, w in enumerate(["tar", "ls", "du"]))
    root = make_vault({f"p{i}.md": f"# Page {i}\n\nIntro paragraph {i}.\n\n{items}\n" for i in range(6)})
    calls = []
    vault = open_vault(root, embedder="fake")
    report = vault.index(progress=lambda stage, done, total: calls.append((stage, done, total)))
    searched = [c for c in calls if c[0] == "embedding"]
    held = [c for c in calls if c[0] == "passages"]
    assert searched[0] == ("embedding", 0, report.chunks)
    assert searched[-1] == ("embedding", report.chunks, report.chunks)
    assert held and held[-1][1] == held[-1][2] == report.passages_wanted > 0
    assert calls.index(searched[-1]) < calls.index(held[0])  # every chunk before any passage
    assert report.searched_ready_s is not None and 0 <= report.searched_ready_s <= report.seconds["embedding"]
    assert "searchable by meaning after" in report.summary()
    assert report.to_dict()["searched_ready_s"] == round(report.searched_ready_s, 3)

    calls.clear()  # nothing left to embed: neither stage, and no claim about it
    again = vault.index(progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert not [c for c in calls if c[0] in ("embedding", "passages")]
    assert again.searched_ready_s is None and "searchable by meaning" not in again.summary()


def test_when_the_display_says_every_chunk_is_in_another_process_finds_them(make_vault):
    """The moment the "embedding" stage ends is committed, not up to 20 s later with the next
    periodic save: another reader of the cache then has every chunk's vector (a review found the
    summary's "searchable by meaning after N s" could run ahead of what search could see)."""
    from wikimem.api import open_vault
    items = "\n\n".join(f"- step {i}: run the {w} command\n\n`{w} --all`" for i, w in enumerate(["tar", "ls", "du"]))
    root = make_vault({f"p{i}.md": f"# Page {i}\n\nIntro paragraph {i}.\n\n{items}\n" for i in range(6)})
    seen = []

    def progress(stage, done, total):
        if stage == "embedding" and done == total:
            other = open_vault(root, embedder="fake")
            status = other.status()
            other.close()
            seen.append((status["vector_coverage"], status["passage_coverage"]))

    vault = open_vault(root, embedder="fake", embed_batch=2)
    report = vault.index(progress=progress)
    assert report.passages_wanted > 0 and len(seen) == 1
    searched, passages = seen[0]
    assert searched == 1.0 and passages < 1.0, seen  # every chunk committed, the passages still to come
