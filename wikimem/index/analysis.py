"""Whoosh analyzer for mixed Chinese/Latin text.

Han runs are segmented with rjieba (search mode: long words plus their shorter parts, for recall);
everything else is split into word characters and lower-cased, without stemming. This lives in
its own importable module because Whoosh pickles the schema, analyzer included.
"""
from __future__ import annotations

import re

from whoosh.analysis import Composable, StopFilter, Token, Tokenizer

_HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"[{_HAN_CLASS}]+|[^\W_{_HAN_CLASS}]+(?:['’][^\W_{_HAN_CLASS}]+)*", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
such than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with would you your yours yourself
yourselves s t don didn doesn isn wasn weren won wouldn couldn shouldn ll re ve d m o y
的 了 和 是 在 也 就 都 而 及 与 着 或 一个 没有 我们 你们 他们 她们 这个 那个 什么 吗 呢 吧 啊""".split())


def _cut(text: str) -> list[str]:
    import rjieba
    return rjieba.cut_for_search(text)


class MixedTokenizer(Tokenizer):
    """Latin words as they are; Han runs through rjieba. Positions are token ordinals."""

    def __eq__(self, other):
        return other.__class__ is self.__class__

    def __call__(self, value, positions=False, chars=False, keeporiginal=False, removestops=True,
                 start_pos=0, start_char=0, tokenize=True, mode="", **kwargs):
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for m in _RUN.finditer(value):
            run = m.group(0)
            pieces = _cut(run) if _HAN.match(run) else (run,)
            for piece in pieces:
                if not piece.strip():
                    continue
                token.text = piece
                token.boost = 1.0
                token.stopped = False
                if keeporiginal:
                    token.original = piece
                if positions:
                    token.pos = pos
                if chars:
                    token.startchar = start_char + m.start()
                    token.endchar = start_char + m.end()
                pos += 1
                yield token


class _Lower(Composable):
    def __eq__(self, other):
        return other.__class__ is self.__class__

    def __call__(self, tokens):
        for t in tokens:
            t.text = t.text.lower()
            yield t


def mixed_analyzer():
    return MixedTokenizer() | _Lower() | StopFilter(stoplist=STOP_WORDS, minsize=1)


def terms(text: str) -> list[str]:
    """Query text -> de-duplicated index terms, in order."""
    return list(dict.fromkeys(t.text for t in mixed_analyzer()(text)))
