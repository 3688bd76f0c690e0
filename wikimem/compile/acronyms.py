"""A name and its acronym, as sources define them: "Technical Steering Committee (TSC)".

A compile made two pages of one thing when sources wrote it both ways (TSC and Technical Steering
Committee, LTS and Long Term Support on Node.js's docs). A definition in the text says they are one:
the expansion then titles the page and the acronym is its alias, so sentences naming either are
cited on it. The acronym must be spelled by the expansion's capitals in order, each word giving the
first one or more of its own ("WebAssembly System Interface (WASI)", "Elliptic Curve Diffie-Hellman
(ECDH)"); a run of capitalised words longer than the acronym gives only its last words ("OpenJS
Foundation Cross-Project Council (CPC)" is "Cross-Project Council"). Both orders are read: "the TSC
(Technical Steering Committee)" as well.
"""
from __future__ import annotations

import re

_WORD = r"[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*"
_SMALL = r"(?:of|and|for|the|on|in|to|de)"
_EXPANSION = rf"{_WORD}(?:\s+(?:{_SMALL}\s+)?{_WORD}){{1,7}}"
_ACRONYM = r"[A-Z][A-Z0-9]{1,7}s?"
_DEFINED = re.compile(rf"({_EXPANSION})\s+\(({_ACRONYM})\)")
_DEFINED_BACK = re.compile(rf"(?<![\w-])({_ACRONYM})\s+\(({_EXPANSION})\)")


def _capitals(word: str) -> str:
    return "".join(c for c in word if c.isupper() or c.isdigit())


def spells(words: list[str], acronym: str) -> bool:
    """Whether ``acronym`` is the first one or more capitals of each of ``words`` in order (small
    words such as "of" may be left out)."""
    letters = acronym.upper()

    def walk(i: int, at: int) -> bool:
        if i == len(words):
            return at == len(letters)
        caps = _capitals(words[i])
        if not caps:  # "of", "and": may give nothing
            return walk(i + 1, at)
        return any(letters[at:at + n] == caps[:n] and walk(i + 1, at + n) for n in range(1, len(caps) + 1))
    return walk(0, 0)


def _defined(run: str, acronym: str) -> str | None:
    """The shortest ending of ``run`` (two words or more) that spells ``acronym``, or None."""
    words = run.split()
    for start in range(len(words) - 2, -1, -1):
        tail = words[start:]
        if tail[0][0].isupper() and spells(tail, acronym):
            return " ".join(tail)
    return None


def pairs(text: str) -> list[tuple[str, str]]:
    """(expansion, acronym) of each definition in ``text``."""
    out = []
    for m in _DEFINED.finditer(text):
        acronym = m.group(2).removesuffix("s")  # "Certificate Authorities (CAs)"
        expansion = _defined(m.group(1), acronym)
        if expansion:
            out.append((expansion, acronym))
    for m in _DEFINED_BACK.finditer(text):
        acronym = m.group(1).removesuffix("s")
        if _defined(m.group(2), acronym) == m.group(2):
            out.append((m.group(2), acronym))
    return out
