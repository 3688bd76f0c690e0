"""API tokens for ``wikimem serve``: made once, shown once, kept only as hashes.

The store is one JSON file in the user's config folder (``$XDG_CONFIG_HOME/wikimem/tokens.json``,
else ``~/.config/wikimem/``; ``%APPDATA%`` on Windows, ``~/Library/Application Support`` on macOS),
mode 0600, never inside a vault: a vault is synced, shared and committed, a token must not be.

A token is 32 random bytes (``wm_`` + base64url). Its SHA-256 is what is stored: a token is not a
password a person chose, so a fast hash is as safe as a slow one (nothing to guess), and checking
it costs a microsecond. Every stored hash is compared with ``hmac.compare_digest``, all of them,
so the time a check takes says nothing about which one matched.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError, UsageError

SCOPES = ("read", "write")
PREFIX = "wm_"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def config_dir() -> Path:
    """The user's wikimem config folder, by the platform's convention."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "wikimem"
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "wikimem"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "wikimem"
    return Path.home() / ".config" / "wikimem"


def token_file() -> Path:
    return Path(os.environ["WIKIMEM_TOKENS"]) if os.environ.get("WIKIMEM_TOKENS") else config_dir() / "tokens.json"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Token:
    name: str
    vault: str  # the served vault's name ("*": every vault of the server)
    scope: str  # read | write
    sha256: str
    created: str

    def allows(self, vault: str, write: bool) -> tuple[bool, bool]:
        """(sees the vault, may do this): another vault's token does not see it at all."""
        sees = self.vault in ("*", vault)
        return sees, sees and (self.scope == "write" or not write)


class TokenStore:
    """The token file: read on every change of it (mtime), written atomically with mode 0600."""

    blocking = False  # a check may wait on something slow (the guard then runs it off the event loop)

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else token_file()
        self._seen: tuple[int, int] | None = None
        self._tokens: list[Token] = []

    # -- reading --------------------------------------------------------------------------------
    def tokens(self) -> list[Token]:
        """The stored tokens, re-read when the file changed (a `token revoke` in another shell takes
        effect on the running server's next request)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._seen, self._tokens = None, []
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {self.path}: {exc.strerror}") from None
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._seen:
            self._tokens = self._load()
            self._seen = stamp
        return list(self._tokens)

    def _load(self) -> list[Token]:
        try:
            text = self.path.read_text(encoding="utf-8")
            if not text.strip():  # made empty (0600) just before its first write
                return []
            data = json.loads(text)
            return [Token(**{k: str(t[k]) for k in ("name", "vault", "scope", "sha256", "created")})
                    for t in data.get("tokens", [])]
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ConfigError(f"the token file {self.path} is not valid ({type(exc).__name__}: {exc}); "
                              "fix or delete it and add the tokens again") from None

    def check(self, presented: str) -> Token | None:
        """The token ``presented`` is, or None. Constant time over the stored hashes."""
        wanted = digest(presented)
        found = None
        for token in self.tokens():
            if hmac.compare_digest(token.sha256, wanted) and found is None:
                found = token
        return found

    # -- changing -------------------------------------------------------------------------------
    def add(self, name: str, vault: str, scope: str) -> str:
        """A new token; the returned secret is shown once and never stored."""
        if not NAME.match(name or ""):
            raise UsageError(f"token name {name!r}: use letters, digits and . _ @ - (up to 64), e.g. alice-laptop")
        if scope not in SCOPES:
            raise UsageError(f"--scope {scope!r}: choose read or write")
        if not vault or not (vault == "*" or NAME.match(vault)):
            raise UsageError(f"--vault {vault!r}: the name a server gives the vault (e.g. notes), or * for all")
        tokens = self.tokens()
        if any(t.name == name for t in tokens):
            raise UsageError(f"a token named {name!r} exists; revoke it first or choose another name")
        secret = PREFIX + secrets.token_urlsafe(32)
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._insert(Token(name, vault, scope, digest(secret), created), tokens)
        return secret

    def revoke(self, name: str) -> Token:
        gone = self._remove(name, self.tokens())
        if gone is None:
            raise UsageError(f"no token named {name!r} (`wikimem token list` shows them)")
        return gone

    def _insert(self, token: Token, tokens: list[Token]) -> None:
        self._save([*tokens, token])

    def _remove(self, name: str, tokens: list[Token]) -> Token | None:
        gone = [t for t in tokens if t.name == name]
        if gone:
            self._save([t for t in tokens if t.name != name])
        return gone[0] if gone else None

    def _save(self, tokens: list[Token]) -> None:
        """Atomic, mode 0600 (an empty 0600 file is made first when there is none: the atomic write
        keeps the mode of the file it replaces), in a 0700 folder."""
        from ..vault.files import atomic_write_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.chmod(self.path, 0o600)  # a file a person made by hand, readable by others, is made private
        text = json.dumps({"version": 1, "tokens": [asdict(t) for t in tokens]}, indent=2) + "\n"
        atomic_write_bytes(self.path, text.encode("utf-8"))
        self._seen = None


class DatabaseTokens(TokenStore):
    """The tokens of servers on the PostgreSQL store, in the database (``stores.pg_tokens``): every
    server behind a load balancer accepts and refuses the same tokens, an add or a revoke holding on
    all of them from their next request. Read on every check (one short question on a held
    connection), so nothing is cached that a revoke elsewhere would leave stale."""

    blocking = True

    def __init__(self, url: str):
        from ..stores import pg
        self.url = url
        self.path = f"the database {pg.server_name(url)} (table wikimem_tokens)"  # type: ignore[assignment]
        self._db = pg.Held(url, "the token table's database", lambda db: None, down_for=2.0, queue_for=5.0)
        self._seen, self._tokens = None, []

    def _run(self, fn):
        """``fn(connection)``; a privilege the database refuses is the GRANT it lacks (MissingGrant)."""
        from ..stores import pg
        try:
            return self._db.run(fn)
        except pg.psycopg().errors.InsufficientPrivilege as exc:
            from ..stores.pg_grants import explain, user_of
            raise explain(exc, user_of(self.url)) from None

    def tokens(self) -> list[Token]:
        from ..stores import pg_tokens
        return [Token(*row) for row in self._run(pg_tokens.active)]

    def _insert(self, token: Token, tokens: list[Token]) -> None:
        from ..stores import pg_tokens
        self._run(lambda db: pg_tokens.insert(db, (token.name, token.vault, token.scope, token.sha256, token.created)))

    def _remove(self, name: str, tokens: list[Token]) -> Token | None:
        from ..stores import pg_tokens
        row = self._run(lambda db: pg_tokens.revoke(db, name))
        return Token(*row) if row else None

    def close(self) -> None:
        self._db.close()


def store_for(settings: list) -> TokenStore:
    """Where the tokens of processes with these settings live: the database when their vaults are
    on the PostgreSQL store (one database: a server's vaults on two databases are refused), else the
    token file. ``WIKIMEM_TOKENS`` naming a file keeps the file."""
    urls = {s.database_url for s in settings if s.store == "postgres" and s.database_url}
    if not urls or os.environ.get("WIKIMEM_TOKENS"):
        return TokenStore()
    if len(urls) > 1:
        from ..stores.pg import server_name
        raise UsageError("the served vaults are on different databases (" + ", ".join(sorted(server_name(u) for u in urls))
                         + "): the tokens live in the database, so serve the vaults of one database per process")
    return DatabaseTokens(urls.pop())


def store_here() -> TokenStore:
    """The token store `wikimem token` works on: as the settings say here (``WIKIMEM_STORE`` and
    ``WIKIMEM_DATABASE_URL``, or the .wikimem.toml of the vault around the current folder)."""
    from ..config import load_settings
    from ..core import default_vault_path
    from ..errors import WikimemError
    try:
        root = default_vault_path(None)
    except WikimemError:
        root = None
    return store_for([load_settings(root)])
