"""The vault's attachments (images, PDFs, audio, video), served read-only to the web page at
``/v/NAME/file/PATH`` through the same path rules as a page read: inside the vault (no ``..``, no
absolute path, no symlink leading out), nothing in a dot folder or with a dot name, nothing
``.wikimemignore`` hides, a regular file only, and only the kinds of file Obsidian shows.

A file is content a note's author chose, not this server's: it is sent with its type fixed by
its extension (never sniffed: ``nosniff``), a Content-Security-Policy that lets nothing run in it,
and only to this server's own pages (``Cross-Origin-Resource-Policy``). An SVG can hold script: it
is served as a download when opened on its own (``Content-Disposition: attachment``) and runs
nothing in an ``<img>`` or under that policy either way.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

from ..errors import UsageError

TYPES = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
    ".avif": "image/avif", ".bmp": "image/bmp", ".ico": "image/x-icon", ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".mp3": "audio/mpeg", ".wav": "audio/wav", ".m4a": "audio/mp4", ".ogg": "audio/ogg", ".oga": "audio/ogg",
    ".flac": "audio/flac", ".3gp": "audio/3gpp", ".webm": "video/webm",
    ".mp4": "video/mp4", ".ogv": "video/ogg", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
}
CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
CHUNK = 1 << 16


class NotServed(UsageError):
    """A path the file route does not serve (a 404: not an attachment, or no such file)."""


def content_type(rel: str) -> str | None:
    return TYPES.get(os.path.splitext(rel)[1].lower())


def check(ctx, rel: str) -> Path:
    """The attachment's file if a read may reach it, else PathEscapeError / UsageError / NotServed."""
    from ..vault.files import IgnoreRules, rel_parts
    parts = rel_parts(rel)
    if not parts:
        raise UsageError("no file named")
    full = ctx.files.abspath("/".join(parts))  # PathEscapeError: "..", absolute, a symlink leading out
    real = full.resolve()
    inside = real.relative_to(ctx.files.root.resolve()).parts  # a symlink inside may not lead into .git
    rules = IgnoreRules.load(ctx.files.root)
    for spelled in (parts, list(inside)):
        if any(p.startswith(".") for p in spelled):
            raise UsageError(f"{rel}: files in dot folders and hidden files are not part of the wiki")
        for depth in range(1, len(spelled) + 1):
            if rules.ignored("/".join(spelled[:depth]), depth < len(spelled)):
                raise UsageError(f"{rel}: hidden by .wikimemignore; it is not part of the wiki")
    if content_type(parts[-1]) is None:
        raise NotServed(f"{rel}: not an attachment the web page shows (images, PDF, audio, video)")
    return full


def open_file(rel: str, full: Path) -> tuple[int, int]:
    """(descriptor, size) of a regular file, opened without blocking on a FIFO."""
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotServed(f"{rel}: no such file") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotServed(f"{rel}: not a regular file")
    return fd, info.st_size


def _chunks(fd: int) -> Iterator[bytes]:
    try:
        while True:
            data = os.read(fd, CHUNK)
            if not data:
                return
            yield data
    finally:
        os.close(fd)


def headers(rel: str, size: int) -> dict[str, str]:
    name = rel.rsplit("/", 1)[-1]
    svg = name.lower().endswith(".svg")
    out = {"Content-Length": str(size), "X-Content-Type-Options": "nosniff", "Cross-Origin-Resource-Policy": "same-origin",
           "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "private, no-cache",
           "Content-Disposition": f"{'attachment' if svg else 'inline'}; filename*=UTF-8''{quote(name, safe='')}"}
    if not name.lower().endswith(".pdf"):  # a sandboxed PDF is not shown by Chromium's viewer
        out["Content-Security-Policy"] = CSP
    else:
        out["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return out


async def respond(host, rel: str):
    """The Starlette response for ``rel`` of the served vault ``host`` (errors raised, not answered)."""
    import anyio
    from starlette.responses import StreamingResponse

    def opened():
        full = check(host.vault.ctx, rel)
        return open_file(rel, full)
    fd, size = await anyio.to_thread.run_sync(opened)
    return StreamingResponse(_chunks(fd), media_type=content_type(rel), headers=headers(rel, size))
