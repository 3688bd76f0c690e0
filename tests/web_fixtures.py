"""A vault for the web page's rendering tests (issue 48): attachments, embeds, callouts and the
rest of Obsidian's syntax, plus the files a read must not reach. ``png()`` writes a real PNG with
zlib and struct (no imaging library)."""
from __future__ import annotations

import struct
import zlib


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid ``rgb`` PNG of ``width`` x ``height`` pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    row = b"\x00" + bytes(rgb) * width
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


RED = (220, 30, 30)
EVIL_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="window.pwned=4">'
            '<script>window.pwned = 5; alert("svg")</script><rect width="40" height="40" fill="green"/></svg>')

FILES: dict[str, str | bytes] = {
    "SCHEMA.md": "# Schema\n",
    ".wikimem.toml": 'embedder = "none"\n',
    ".wikimemignore": "private/\n",
    "attachments/logo.png": png(60, 40, RED),
    "attachments/evil.svg": EVIL_SVG,
    "attachments/manual.pdf": b"%PDF-1.4\n% a tiny pdf\n",
    "attachments/sound.mp3": b"ID3\x03\x00\x00\x00\x00\x00\x00",
    "attachments/notes.txt": "plain text is not an attachment the page shows\n",
    ".obsidian/secret.png": png(2, 2, (0, 0, 0)),
    "private/hidden.png": png(2, 2, (0, 0, 0)),
    "private/Secret Plan.md": "# Secret Plan\n\nthe hidden launch code 4242\n",
    "concepts/Source.md": ("# Source\n\nIntro of the source.\n\n## Details\n\nThe embedded heading text.\n\n"
                           "A block paragraph worth quoting. ^para1\n\n## Other\n\nnot in the details section\n"),
    "notes/Gallery.md": ("# Gallery\n\nBy name: ![[logo.png|200]]\n\nBy path: ![the logo](attachments/logo.png)\n\n"
                         "Sized: ![[logo.png|120x80]]\n\nSound: ![[sound.mp3]]\n\nManual: ![[manual.pdf]]\n\n"
                         "Vector: ![[evil.svg]]\n"),
    "notes/Embeds.md": ("# Embeds\n\n![[Source]]\n\n![[Source#Details]]\n\n![[Source#^para1]]\n\n"
                        "![[Secret Plan]]\n\n![[Loop A]]\n"),
    "notes/Heading Only.md": "# Heading Only\n\n![[Source#Details]]\n",
    "notes/Loop A.md": "# Loop A\n\nA says hi.\n\n![[Loop B]]\n",
    "notes/Loop B.md": "# Loop B\n\nB says hi.\n\n![[Loop A]]\n",
    "notes/Deep 1.md": "# Deep 1\n\nlevel one\n\n![[Deep 2]]\n",
    "notes/Deep 2.md": "# Deep 2\n\nlevel two\n\n![[Deep 3]]\n",
    "notes/Deep 3.md": "# Deep 3\n\nlevel three\n\n![[Deep 4]]\n",
    "notes/Deep 4.md": "# Deep 4\n\nlevel four\n\n![[Deep 5]]\n",
    "notes/Deep 5.md": "# Deep 5\n\nlevel five\n",
    "notes/Syntax.md": ("# Syntax\n\n> [!tip]- Fold me\n> Tip body text.\n\n> [!warning] Careful now\n> Warning body.\n\n"
                        "> plain quote\n\nSome ==highlighted words== here.\n\n- [ ] open task\n- [x] done task\n\n"
                        "A claim[^src] and an aside^[inline footnote text].\n\nInline $a_b_c$ and:\n\n$$\n\\sum_i x_i\n$$\n\n"
                        "[^src]: The footnote's source.\n"),
    "notes/Untitled thoughts.md": "Just some words, no heading at all.\n",
    "notes/Titled.md": "---\ntitle: Fancy Title\n---\n# Another H1\n\nbody\n",
    "notes/Evil Title.md": ("---\ntitle: \"<script>window.pwned=6</script>\"\n---\n"
                            "> [!info] <img src=x onerror=\"window.pwned=7\"> Boom\n> callout body\n"),
    "notes/Old Plan.md": "# Old Plan\n\nthe old way\n",
    "notes/New Plan.md": "---\nsupersedes: \"[[Old Plan]]\"\n---\n# New Plan\n\nthe new way\n",
    "notes/Table.md": "# Table\n\n## Prices\n\n| fruit | price |\n|---|---|\n| apple | 3 |\n| mango | 7 |\n",
    "projects/alpha/Spec.md": "---\ntags: [design]\n---\n# Spec\n\nalpha spec\n",
    "projects/alpha/Notes.md": "---\ntags: [design/ui]\n---\n# Alpha Notes\n\nnotes\n",
    "projects/beta/Plan.md": "# Beta Plan\n\nbeta\n",
}
