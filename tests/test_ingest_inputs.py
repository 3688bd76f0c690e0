"""Issue 27 item 20: ingest refuses what is not a file, and binary or oversized input, before copying."""
import os

import pytest

from wikimem.api import init_vault, open_vault


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    return open_vault(root, embedder="none")


def test_a_fifo_or_a_device_is_not_a_file(vault, tmp_path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    for given in (fifo, "/dev/zero"):
        item = vault.ingest([given], kind="article").items[0]
        assert item.status == "failed" and "not a regular file" in item.message  # Was: "no such file"
    assert vault.ingest([tmp_path / "missing.md"]).items[0].message == "no such file"


def test_binary_given_as_an_article_is_refused_before_anything_is_written(vault, tmp_path):
    blob = tmp_path / "blob.md"
    blob.write_bytes(os.urandom(4096) + b"\x00" * 4096)
    item = vault.ingest([blob], kind="article").items[0]
    assert item.status == "failed" and "binary" in item.message and "--kind asset" in item.message
    assert not any((vault.root / "raw").rglob("blob*"))


def test_an_oversized_text_source_is_refused_before_it_is_read(vault, tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(vault.files.max_bytes + 1)  # sparse: no real disk use
    item = vault.ingest([big], kind="article").items[0]
    assert item.status == "failed" and "MB" in item.message
    assert not any((vault.root / "raw").rglob("big*"))
