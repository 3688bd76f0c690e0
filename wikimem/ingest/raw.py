"""The one door into raw/: every source an ingest, a conversation import or a transcript import
adds goes through ``add_raw``. raw/ is forever (nothing in it is ever modified or replaced), so what
enters is checked once, here: the name (knowledge/names.py: control and bidi characters, a secret
in the name), the text for secrets (a file that decodes as UTF-8; binary assets are copied as they
are), and the write itself creates only (vault/files.py ``create_file``: atomic, never replacing,
never outside the vault)."""
from __future__ import annotations

from ..errors import UsageError
from ..knowledge import secrets
from ..knowledge.names import check_name
from ..vault.files import is_raw_path


def add_raw(ctx, rel: str, data: bytes, *, scanned: bool = False) -> str:
    """Add the new file ``rel`` (under raw/) holding ``data``; returns its sha256. ``scanned``: the
    caller already ran the secret scan over exactly this text."""
    if not is_raw_path(rel):
        raise UsageError(f"{rel}: sources are added under raw/ only")
    check_name(rel)
    if not scanned:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None  # an image, a PDF: its extracted text is scanned by the caller before this
        if text is not None:
            secrets.check(text, rel)  # raw/ is forever: a secret never gets in
    return ctx.files.create_file(rel, data)
