"""Property: whatever a person writes on a compiled page, above, below or inside its compiled section,
survives any sequence of compiles, source edits, source deletions and new sources."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write_vault
from wikimem.api import open_vault

PAGE = "entities/Tool X.md"
START = "---\ntype: entity\n---\n# Tool X\n\nTool X is a tool people use.\n"
SOURCES = [
    "# A\n\nTool X is written in Rust.\n\nTool X runs on Linux.\n",
    "# B\n\n- Tool X has a plugin system.\n- Install Tool X with a package manager.\n",
    "# C\n\nMany people use Tool X every day.\n",
]
VARIANTS = ["Tool X is written in Go.", "Tool X now runs everywhere.", "Nothing about it here."]

ops = st.lists(st.one_of(
    st.just(("compile",)),
    st.tuples(st.just("edit_source"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("delete_source"), st.integers(0, 2)),
    st.tuples(st.just("add_source"), st.integers(0, 2)),
    st.tuples(st.just("person"), st.sampled_from(["above", "below", "inside", "change"])),
), min_size=1, max_size=7)


def _person_edit(path: Path, where: str, n: int) -> str:
    text = path.read_text(encoding="utf-8")
    line = f"Person note {n} stays here."
    begin = text.find("<!-- wikimem:begin compiled")
    if where == "above":
        text = text.replace("# Tool X\n", f"# Tool X\n\n{line}\n", 1)
    elif where == "inside" and begin >= 0:
        eol = text.index("\n", begin) + 1
        text = text[:eol] + line + "\n" + text[eol:]
    elif where == "change" and begin >= 0 and "\n- " in text[begin:]:
        at = text.index("\n- ", begin) + 3
        text = text[:at] + f"Person note {n} stays here: " + text[at:]
        line = f"Person note {n} stays here: "
    else:
        text = text.rstrip("\n") + f"\n\n{line}\n"
    path.write_text(text, encoding="utf-8")
    return line


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_a_persons_text_survives_any_compile_sequence(sequence):
    tmp = Path(tempfile.mkdtemp(prefix="wm-compile-prop-"))
    try:
        root = write_vault(tmp / "v", {PAGE: START, **{f"raw/articles/s{i}.md": s for i, s in enumerate(SOURCES)}})
        v = open_vault(root, embedder="none")
        page = root / PAGE
        kept = ["Tool X is a tool people use."]
        for n, op in enumerate(sequence):
            raw = root / f"raw/articles/s{op[1]}.md" if len(op) > 1 and op[0] != "person" else None
            if op[0] == "compile":
                v.compile()
            elif op[0] == "edit_source" and raw.exists():
                raw.write_text(raw.read_text(encoding="utf-8").rstrip("\n") + f"\n\n{VARIANTS[op[2]]}\n",
                               encoding="utf-8")
            elif op[0] == "delete_source" and raw.exists():
                raw.unlink()
            elif op[0] == "add_source":
                raw.write_text(SOURCES[op[1]], encoding="utf-8")
            elif op[0] == "person":
                kept.append(_person_edit(page, op[1], n))
            text = page.read_text(encoding="utf-8")
            for line in kept:
                assert line in text, (sequence[:n + 1], line, text)
        v.compile()
        text = page.read_text(encoding="utf-8")
        assert all(line in text for line in kept), (sequence, text)
        before = text
        v.compile()
        assert page.read_text(encoding="utf-8") == before  # settled: compiling again changes nothing
        v.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
