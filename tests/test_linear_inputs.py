"""Issue 27 items 3-6: no input stalls the vault; cost stays linear in the input.

Time bounds are generous (a slow CI machine must pass them) and sit far below what the quadratic
code took: each test failed before its fix, by minutes, not by a margin.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from wikimem.api import open_vault
from wikimem.config import load_settings
from wikimem.errors import ConfigError
from wikimem.parse.chunk import chunk_page
from wikimem.parse.page import parse_page
from wikimem.vault.files import IgnoreRules, VaultFiles

MIB = 1024 * 1024
_BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_pathological.py"
_spec = importlib.util.spec_from_file_location("bench_pathological", _BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)  # type: ignore[union-attr]


# -- item 3: max_file_mb -------------------------------------------------------------------------
@pytest.mark.parametrize("value", [100000, 1025, "2048"])
def test_an_absurd_max_file_mb_is_a_config_error_naming_it(tmp_path, value):
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text(f"max_file_mb = {value}\n" if isinstance(value, int)
                                                      else f'max_file_mb = "{value}"\n')
    with pytest.raises(ConfigError, match="max_file_mb"):
        load_settings(tmp_path, env={})
    with pytest.raises(ConfigError, match="max_file_mb"):
        load_settings(None, env={"WIKIMEM_MAX_FILE_MB": str(value)})



@pytest.fixture(autouse=True)
def _no_heap_from_earlier_tests():
    """The times below are this thread's CPU time, but Python's cyclic GC scans every live object
    on each full pass: after ~1,700 tests (the PostgreSQL suite) the heap they left made the 20k-link
    resolve 11.8x the 5k one (CI), where alone it is ~4x. Objects made before the test are frozen
    out of the collector's passes for its duration; the test's own objects are still collected."""
    import gc
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_sane_max_file_mb_values_still_pass():
    assert load_settings(None, env={"WIKIMEM_MAX_FILE_MB": "1024"}).max_file_mb == 1024.0
    assert load_settings(None, overrides={"max_file_mb": 0.5}).max_file_mb == 0.5


def test_a_huge_cap_reads_a_note_with_a_bound(tmp_path):
    """The read asked for ``max_bytes + 1`` bytes at once: with a 100 GB cap, a MemoryError."""
    (tmp_path / "a.md").write_text("# A\n\nalpha\n")
    files = VaultFiles(tmp_path, max_bytes=100_000 * MIB)
    assert files.read_note("a.md").text == "# A\n\nalpha\n"
    small = VaultFiles(tmp_path, max_bytes=5)
    assert small.check_note("a.md").kind == "too_large"


# -- item 4: long supersede chains ----------------------------------------------------------------
CHAIN = 10_000


def _chain_vault(root: Path, n: int) -> None:
    root.mkdir()
    (root / "p0.md").write_text("# p0\n\nversion 0\n")
    for i in range(1, n):
        (root / f"p{i}.md").write_text(f'---\nsupersedes: "[[p{i - 1}]]"\n---\n# p{i}\n\nversion {i}\n')


@pytest.fixture(scope="module")
def chain_vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("chain") / "vault"
    _chain_vault(root, CHAIN)
    v = open_vault(root, embedder="none")
    v.index()
    yield v
    v.close()


def test_lint_of_a_10k_supersede_chain_finishes(chain_vault):
    """WM302 walked from every page copying its trail at each step: cubic, never finished."""
    t0 = time.thread_time()
    report = chain_vault.lint(select=["WM30"])
    elapsed = time.thread_time() - t0
    codes = {f.code for f in report.findings} if hasattr(report, "findings") else set()
    assert "WM302" not in codes
    assert elapsed < 30, f"lint of a {CHAIN}-page chain took {elapsed:.1f} s"


def test_history_of_a_10k_supersede_chain_answers(chain_vault):
    """order_chain sorted every page at each step: 57 s for the first page of a 10k chain."""
    t0 = time.thread_time()
    h = chain_vault.history("p0.md")
    elapsed = time.thread_time() - t0
    assert [v.path for v in h.versions[:3]] == ["p0.md", "p1.md", "p2.md"]
    assert h.current == f"p{CHAIN - 1}.md" and len(h.versions) == CHAIN and len(h.changes) == CHAIN - 1
    assert elapsed < 30, f"history of a {CHAIN}-page chain took {elapsed:.1f} s"


def test_a_long_supersede_cycle_is_one_finding(tmp_path):
    root = tmp_path / "vault"
    _chain_vault(root, 5000)
    (root / "p0.md").write_text('---\nsupersedes: "[[p4999]]"\n---\n# p0\n')  # the chain closes (the old walk: 34 s at 3,000 pages, cubic)
    v = open_vault(root, embedder="none")
    try:
        t0 = time.thread_time()
        findings = [f for f in v.lint(select=["WM302"]).findings if f.code == "WM302"]
        assert time.thread_time() - t0 < 30
    finally:
        v.close()
    assert len(findings) == 1 and findings[0].path == "p0.md"
    assert findings[0].message.startswith("supersedes cycle: p0.md -> p4999.md -> p4998.md")
    assert findings[0].message.endswith("p1.md -> p0.md")


# -- item 5: pathological notes --------------------------------------------------------------------
SECONDS_PER_MB = 60.0
"""Only a stall fails this bound: the quadratic code took minutes for these inputs. Speed itself is
measured by benchmarks/bench_pathological.py: this machine parses and chunks them at 0.1-12 s per MB,
and a CI machine read 2.67 s for 128 KB of brackets (20 s per MB) where this one reads 1.2 s."""


def _parse_and_chunk(text: str) -> float:
    """This thread's CPU seconds, not wall-clock nor the process's: parsing runs on this thread
    alone. The wall clock measured the machine's other work too (a 32 KB case took 1.1 s of wall
    time under load), and the process's CPU time counted the threads earlier tests left in this
    pytest process (watchers, model thread pools: a 32 KB case read 0.63 s in a CI run)."""
    t0 = time.thread_time()
    chunk_page(parse_page("note.md", text))
    return time.thread_time() - t0


def test_a_note_of_40k_unclosed_wikilinks_parses_in_seconds():
    text = "[[a " * 40_000 + "\n\n" + "x" * 10  # 160 KB: 36.7 s a build before (parse), minutes to chunk
    elapsed = _parse_and_chunk(text)
    assert elapsed < 10, f"{elapsed:.1f} s"


@pytest.mark.parametrize("name", sorted(bench.CASES))
def test_pathological_input_is_linear(name):
    """Each pathological input: 4x the input costs < 12x the time (linear: 4x; quadratic: 16x or
    more), and no stall (SECONDS_PER_MB). 1 MB of each is benchmarks' job. Under `stress-ng --cpu 4`
    on two cores a linear case (fence_open) read 8.5-9.2x on this thread's CPU time, every attempt:
    the larger input's working set leaves the cache the other processes share, so the bound sits
    above that and below what quadratic code takes. Measured up to three times (a retry takes the
    best of three): a busy machine makes one run's ratio noisy, quadratic code fails every one."""
    small, large = 32 * 1024, 128 * 1024
    ratios = []
    texts = bench.CASES[name](small), bench.CASES[name](large)
    for attempt in range(3):
        runs = 1 if attempt == 0 else 3  # a retry takes the best of three: noise only ever adds time
        t_small = min(_parse_and_chunk(texts[0]) for _ in range(runs))
        assert t_small < SECONDS_PER_MB * small / MIB, f"{name}: {t_small:.2f} s for 32 KB"
        t_large = min(_parse_and_chunk(texts[1]) for _ in range(runs))
        assert t_large < SECONDS_PER_MB * large / MIB, f"{name}: {t_large:.2f} s for 128 KB"
        if t_large < 0.2:  # below that, timer noise and fixed costs decide the ratio
            return
        ratios.append(t_large / max(t_small, 1e-3))
        if ratios[-1] < 12:
            return
    pytest.fail(f"{name}: 4x the input took {', '.join(f'{r:.1f}' for r in ratios)}x the time")


def test_unclosed_openers_keep_their_meaning():
    page = parse_page("n.md", "[[a [[b]] [x](y.md) ![[c.png]] [[ never\n\n[z] `[[no]]` [[d|D]]\n")
    assert [(l.target, l.kind) for l in page.links] == [("b", "wikilink"), ("y.md", "markdown"),
                                                        ("c.png", "embed"), ("d", "wikilink")]


# -- item 6: many ignore patterns ---------------------------------------------------------------------
def _ignore_lines(n: int) -> list[str]:
    lines = []
    for i in range(n):
        kind = i % 4
        lines.append(f"draft-{i}.md" if kind == 0 else f"folder{i}/" if kind == 1 else
                     f"notes/old-{i}-*.md" if kind == 2 else f"*.tmp{i}")
    return lines


def test_forty_thousand_ignore_patterns_scan_fast(tmp_path):
    """Past fnmatch's 32,768-pattern cache every match recompiled: 40k lines, 123 s an index."""
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    for i in range(300):
        (root / "notes" / f"n{i}.md").write_text(f"# n{i}\n")
    (root / "notes" / "old-2-x.md").write_text("ignored by a glob")
    (root / "draft-4.md").write_text("ignored by a name")
    (root / "folder5").mkdir()
    (root / "folder5" / "x.md").write_text("ignored folder")
    (root / "a.tmp7").write_text("ignored by a suffix")
    (root / ".wikimemignore").write_text("\n".join(_ignore_lines(40_000) + ["!notes/n1.md", "notes/n1.md"]) + "\n")
    t0 = time.thread_time()
    paths = [f.path for f in VaultFiles(root).scan().files]
    elapsed = time.thread_time() - t0
    assert elapsed < 4, f"scan with 40k ignore patterns took {elapsed:.1f} s"  # 12.8 s before
    assert "notes/n0.md" in paths and "notes/n1.md" not in paths
    for gone in ("notes/old-2-x.md", "draft-4.md", "folder5/x.md", "a.tmp7"):
        assert gone not in paths


def test_a_hundred_thousand_patterns_match_in_constant_time():
    rules = IgnoreRules(_ignore_lines(100_000) + ["*.bak", "!keep.bak", "deep/*/x?.md"])
    t0 = time.thread_time()
    for i in range(2000):
        assert not rules.ignored(f"notes/n{i}.md", False)
        assert rules.ignored(f"draft-{4 * (i % 1000)}.md", False)
    assert rules.ignored("folder1", True) and not rules.ignored("folder1", False)
    assert rules.ignored("x.bak", False) and not rules.ignored("keep.bak", False)
    assert rules.ignored("deep/a/x1.md", False) and not rules.ignored("deep/a/x12.md", False)
    assert rules.ignored("deep/a/b/x1.md", False)  # fnmatch's * crosses folders, as it always did here
    assert rules.ignored("notes/old-6-anything.md", False) and not rules.ignored("other/old-6-a.md", False)
    assert time.thread_time() - t0 < 10


def test_a_long_frontmatter_line_without_a_colon_is_read_fast():
    """Sibling in parse/frontmatter.py: the top-level key regex (each edit of a note's
    frontmatter finds its keys' lines with it) was quadratic in a line's spaces: 12 s for 80k."""
    from wikimem.parse.frontmatter import _key_spans
    raw = "title: T\n" + "a" + " " * 200_000 + "b\nstatus: draft\n"
    t0 = time.thread_time()
    assert _key_spans(raw) == {"title": (0, 2), "status": (2, 3)}
    assert time.thread_time() - t0 < 5


def test_links_to_many_blocks_of_one_page_resolve_in_linear_time():
    """Sibling in parse/resolve.py: each distinct [[page#^block]] scanned all the page's blocks
    (20k links to a 20k-block page: 10.9 s)."""
    from wikimem.parse.resolve import Resolver

    def resolve(n: int) -> float:
        big = parse_page("big.md", "".join(f"## line {i}\n\npara ^b{i}\n\n" for i in range(n)))
        src = parse_page("src.md", "".join(f"[[big#^b{i}]] [[big#line {i}]] [[big#^nope{i}]]\n" for i in range(n)))
        r = Resolver(["big.md", "src.md"], {"big.md": big, "src.md": src})
        t0 = time.thread_time()
        links = r.resolve_page(src).links
        elapsed = time.thread_time() - t0
        assert [l.anchor_ok for l in links[:3]] == [True, True, False]
        return elapsed

    # the best of three of each: one run on a busy machine (a CI run beside a benchmark) measured 11x
    # for 4x the input; quadratic is 16x (and 10.9 s at 20k), linear about 4x
    t_small = min(resolve(5000) for _ in range(3))
    t_large = min(resolve(20_000) for _ in range(3))
    assert t_large < 5 and (t_large < 0.2 or t_large / max(t_small, 1e-3) < 10), (t_small, t_large)


@pytest.mark.parametrize("unit", ["[[a ", "[", "[x](", "```\n", "`", "~~~ x\n"])
def test_lint_prose_stripping_is_linear_in_its_input(unit):
    """lint/text.strip_markup: its regex tried every [ and backtick to the end of the line (340 s a
    MB on `[[a `); a 1 MB note of each pathological unit now takes well under the bound."""
    import time
    from wikimem.lint.text import strip_markup
    text = unit * (1_000_000 // len(unit))
    started = time.thread_time()
    strip_markup(text)
    assert time.thread_time() - started < 15.0
