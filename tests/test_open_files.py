"""A vault opened and dropped without ``close()`` leaves no file open (a library user's loop, a
long test run): the memo of the manifest's meta held every SQLite connection it had seen, 4 file
descriptors per vault, and the whole suite reached the 1,024 limit."""
import gc
import os

import pytest

from wikimem.api import open_vault


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd (Linux)")
@pytest.mark.parametrize("after_lint", [False, True])
def test_vaults_opened_searched_and_dropped_leave_no_file_open(make_vault, after_lint):
    """``after_lint``: a `wikimem lint` ran in this process first (as a test runner, or a Python caller
    of the CLI, runs it). Lint froze the collector's view after loading (right for its one-shot
    process) and the flag stayed set: every vault opened later in the process was frozen in its
    reference cycle, and its files stayed open."""
    if after_lint:
        from typer.testing import CliRunner

        from wikimem.cli import app
        linted = make_vault({"SCHEMA.md": "# S\n", "a.md": "# A\n"}, name="linted")
        assert CliRunner().invoke(app, ["lint", str(linted)]).exit_code in (0, 1)
    def one(i: int) -> None:
        v = open_vault(make_vault({"SCHEMA.md": "# S\n", "a.md": f"# A\n\nalpha beta {i}\n"}, name=f"v{i}"),
                       embedder="fake")
        v.index()
        assert v.search("alpha", limit=3).hits
        assert v.status()["pages"] == 2

    one(0)  # whatever the first vault starts once per process (the embedder, the analyzer)
    gc.collect()
    before = _open_files()
    for i in range(1, 11):
        one(i)
    gc.collect()
    assert _open_files() - before <= 2, "open files grew with each vault opened and dropped"
