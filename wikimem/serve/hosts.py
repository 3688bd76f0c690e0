"""One served vault: its open ``Vault`` (warm cache), the ``Tools`` every client's calls go through,
the watcher that keeps it in step (serve takes the watcher's role; when another process holds it,
this server stands by and takes it over when that process dies: ``standby.py``), its MCP servers,
and whether it is still there."""
from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from ..errors import LockError, UsageError

log = logging.getLogger(__name__)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def vault_name(root: Path) -> str:
    """A served vault's default name: its folder's name, made URL-safe."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.resolve().name).strip("-.") or "vault"
    return name[:64]


def parse_vault_specs(positional: list[str], named: list[str]) -> list[tuple[str, Path]]:
    """``VAULT`` arguments and ``--vault NAME=PATH`` options as (name, folder) pairs; names unique."""
    pairs: list[tuple[str, Path]] = []
    for spec in named:
        name, sep, path = spec.partition("=")
        if not sep or not path:
            raise UsageError(f"--vault {spec!r}: give NAME=PATH, e.g. --vault notes=~/notes")
        pairs.append((name, Path(path).expanduser()))
    for path in positional:
        root = Path(path).expanduser()
        pairs.append((vault_name(root), root))
    if not pairs:
        from ..core import default_vault_path
        root = default_vault_path(None)
        pairs.append((vault_name(root), root))
    seen: set[str] = set()
    for name, root in pairs:
        if not NAME.match(name):
            raise UsageError(f"vault name {name!r}: use letters, digits, . _ - (it is part of URLs)")
        if name in seen:
            raise UsageError(f"two vaults named {name!r}: name them with --vault NAME=PATH")
        seen.add(name)
        if not root.is_dir():
            raise UsageError(f"{root}: no such folder")
    return pairs


class VaultHost:
    """A vault as the server holds it."""

    def __init__(self, name: str, root: Path, watch: bool = True, **overrides: Any):
        from ..api import open_vault
        from ..mcp.tools import Tools

        self.name = name
        self.vault = open_vault(root, **overrides)
        self.root = self.vault.root
        self._refuse_newer()
        self.tools = Tools(self.vault)
        self.watch = watch
        self.session = self.vault.warm_session(watch=False)  # the watcher is started here (or a standby for it)
        self.watcher = None
        self.standby = None  # a Standby while another process holds the watching role
        self.mcp: dict[str, Any] = {}  # "read" | "write" -> (MCPServer, its ASGI app)
        self.lock = threading.Lock()
        self._stopping = False
        self._deaths = 0  # watchers of this vault that died of an unexpected error

    def _refuse_newer(self) -> None:
        """A vault whose cache a newer wikimem wrote is not served (each request would be refused):
        said at start, one line, as `index` and `search` say it."""
        from ..stores.pg import NewerSchema
        try:
            self.vault.cache.manifest_problem()
        except NewerSchema:
            self.vault.close()
            raise
        except Exception:  # noqa: BLE001 - any other problem: the warm-up reports it, as before
            log.debug("cache of %s not checked at start", self.name, exc_info=True)

    def start(self) -> None:
        """Take the vault: its watcher, or when another process watches it, a standby that takes
        the role over when that process dies; then the warm-up in the background."""
        if self.watch:
            watcher = self._new_watcher()
            try:
                watcher.start()
                self.watcher = watcher
            except LockError as exc:
                from .standby import Standby
                log.warning("vault %s (%s) is watched by another process: %s. This server answers and stands by "
                            "to take over watching it when that process ends", self.name, self.root, exc)
                self.standby = Standby(self.name, lambda: watcher.start(), self._took_over, str(exc)).start()
        self.session.go.set()  # no handshake to wait for
        self.session.start()

    def _new_watcher(self):
        watcher = self.vault.watch()
        watcher.on_died = self._watcher_died
        return watcher

    def _took_over(self, watcher) -> None:
        self.watcher = watcher

    def _watcher_died(self, dead) -> None:
        """The watcher's worker died of an error no one expected (it let go of the watch lock on the
        way out): stand by for the role as for a dead process's, so it is taken again within
        ``standby.EVERY_S`` (here, or by another serve of the vault), its start-up reconcile
        indexing what changed meanwhile. Without this, the process held the lock with no worker:
        no standby anywhere could take over, and edits on disk were never indexed."""
        from .standby import Standby
        with self.lock:
            if self._stopping or self.watcher is not dead:
                return
            error = dead.status().get("last_error")
            log.warning("the watcher of %s stopped on an error (%s); standing by to watch it again", self.name, error)
            from .standby import EVERY_S
            self._deaths += 1  # one that dies again and again is retried less and less often (up to a minute)
            watcher = self._new_watcher()
            self.watcher = None
            self.standby = Standby(self.name, lambda: watcher.start(), self._took_over,
                                   f"the watcher stopped on an error ({error}) (pid {os.getpid()})",
                                   every=min(60.0, EVERY_S * 2 ** (self._deaths - 1))).start()

    def stop(self) -> None:
        with self.lock:
            self._stopping = True
        self.session.stop()
        if self.standby is not None:
            self.standby.stop()  # first: it may be starting a watcher, which is then stopped below
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception:  # noqa: BLE001 - stopping must go on for the other vaults
                log.exception("the watcher of %s did not stop cleanly", self.name)
        self.vault.close()

    def problem(self) -> str | None:
        """Why this vault cannot be served now (its folder is gone), or None."""
        try:
            if not self.root.is_dir():
                return f"the vault folder {self.root} is gone; this vault is not served until it is back and the server restarted"
        except OSError as exc:
            return f"the vault folder {self.root} cannot be read ({exc.strerror})"
        if self.watcher is not None:
            because = self.watcher.status().get("stopped_because")
            if because:
                return f"the vault stopped being watched: {because}"
        return None

    def state(self) -> dict[str, Any]:
        problem = self.problem()
        info: dict[str, Any] = {"name": self.name, "root": str(self.root), "state": "gone" if problem else
                                ("ready" if self.session.ready.is_set() else "warming")}
        if problem:
            info["problem"] = problem
        return info

    def database(self) -> dict[str, Any] | None:
        """Whether this vault's database answers now (one short connection and ``SELECT 1``), or
        None for the local store. Why: a load balancer must hear a vault that cannot serve."""
        settings = self.vault.ctx.settings
        if settings.store != "postgres":
            return None
        from ..errors import WikimemError
        from ..stores import pg
        try:
            pg.answers(settings.database_url)
            return {"ok": True, "server": pg.server_name(settings.database_url)}
        except WikimemError as exc:
            return {"ok": False, "server": pg.server_name(settings.database_url), "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a driver error mid-probe is the database not answering
            return {"ok": False, "server": pg.server_name(settings.database_url), "error": type(exc).__name__}

    def health(self) -> dict[str, Any]:
        """What /health says of this vault: can it serve, its database, its watcher (alive, who
        holds it, its backlog, the last build). ``ok`` False: this vault cannot answer now."""
        problem = self.problem()
        db = self.database()
        info: dict[str, Any] = {"name": self.name, "ok": not problem and (db is None or db["ok"])}
        if problem:
            info["problem"] = problem
        if db is not None:
            info["database"] = db
        if self.watcher is not None:
            w = self.watcher.status()
            info["watcher"] = {"here": True, "alive": bool(self.watcher.running), "pid": w.get("pid"),
                               "state": w.get("state"), "backlog": self.watcher.changes.pending(),
                               "last_error": w.get("last_error"),
                               "last_build_at": (w.get("last_build") or {}).get("at")}
            if self.standby is not None:
                info["watcher"]["took_over_at"] = self.standby.took_at
        elif self.standby is not None:
            info["watcher"] = {"here": False, **self.standby.state()}
        else:
            info["watcher"] = {"here": False}
        return info

    def mcp_server(self, scope: str):
        """The MCP server for a token's scope (read: no write tools listed at all) -> (server, app)."""
        with self.lock:
            if scope not in self.mcp:
                from mcp.server.transport_security import TransportSecuritySettings

                from ..mcp.server import build_server
                from .mcp_author import AuthorFromRequest
                server = build_server(self.vault, read_only=scope != "write", ready=self.session.ready,
                                      tools=self.tools, extra_middleware=[AuthorFromRequest()])
                app = server.streamable_http_app(
                    streamable_http_path="/", json_response=True,
                    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
                self.mcp[scope] = (server, app)
            return self.mcp[scope]
