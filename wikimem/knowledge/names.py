"""The one check of a name every door takes: writes, edits, moves (source and target), deletes,
remember's new pages and the writer itself (issue 35 item 8).

A name is refused, with the reason, when it could not be shown or trusted as written:
- control characters (a newline or tab in a name splits log.md's line and the listing);
- Unicode format characters, the bidirectional overrides above all (U+202E shows ``gpj.exe`` as
  ``exe.jpg``: a name a person reads differently from what it is);
- a first folder ``~`` (a shell would expand it, wikimem makes a folder named ``~``);
- a secret (an API key as a name would sit in the manifest, the file list and log.md: the writer
  scans the text it writes, and a name is text it writes too).
Reads use the same rules for what they may reach (``readable``): notes of the vault only, never a
dot folder (``.wikimem``, ``.git``, ``.obsidian``, ``.trash``) nor a file ``.wikimemignore`` hides.
"""
from __future__ import annotations

import unicodedata

from ..errors import UsageError
from . import secrets

_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def check_name(rel: str) -> str:
    """``rel`` (slashes as given) when every part of it can be a name wikimem writes; else UsageError
    (or SecretError) saying why. Path escapes, raw/ and suffixes are the callers' own checks."""
    shown = rel.encode("unicode_escape").decode("ascii") if rel.isprintable() is False else rel
    for ch in rel:
        if ch in _BIDI:
            raise UsageError(f"{shown!r}: a name with a bidirectional control character (U+{ord(ch):04X}) reads "
                             "differently from what it is; rename it without one")
        category = unicodedata.category(ch)
        if category == "Cc" or category in ("Zl", "Zp"):  # U+2028/U+2029 break a line as \n does
            raise UsageError(f"{shown!r}: a name with a line break, tab or other control character cannot be written")
        if category == "Cf" and ch not in "\u200c\u200d":  # ZWNJ/ZWJ are part of some scripts' spelling
            raise UsageError(f"{shown!r}: a name with an invisible format character (U+{ord(ch):04X}) cannot be "
                             "written; rename it without one")
    first = rel.replace("\\", "/").lstrip("/").split("/", 1)[0]
    if first.strip() == "~" or (first.startswith("~") and "/" in rel.replace("\\", "/")):
        raise UsageError(f"{rel}: a name starting with '~' is not your home folder here; give a path inside "
                         "the vault, such as concepts/Page.md")
    secrets.check(rel, "the file name")
    return rel


def refuse_unreadable(ctx, rel: str) -> None:
    """Refuse what a read may not reach: anything in a dot folder or with a dot name (the cache
    holds settings with keys, .git holds remotes with passwords, .trash what was deleted), a file
    ``.wikimemignore`` hides, anything that is not a Markdown note. The error names the rule, never
    the file's content."""
    from ..vault.files import IgnoreRules, NOTE_SUFFIXES, rel_parts

    parts = rel_parts(rel)
    if any(p.startswith(".") for p in parts):
        raise UsageError(f"{rel}: files in dot folders (.wikimem, .git, .obsidian, .trash) and hidden files are "
                         "not part of the wiki; they cannot be read through wikimem")
    if not parts or not parts[-1].lower().endswith(NOTE_SUFFIXES):
        raise UsageError(f"{rel}: not a note; only Markdown notes (.md) can be read as pages")
    rules = IgnoreRules.load(ctx.files.root)
    for depth in range(1, len(parts) + 1):
        if rules.ignored("/".join(parts[:depth]), depth < len(parts)):
            raise UsageError(f"{rel}: hidden by .wikimemignore; it is not part of the wiki")
