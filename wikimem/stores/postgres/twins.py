"""The same vault twice in one database: said once, not built silently.

A vault's schema is named from its ``vault_id``, by default the vault folder's name. A teammate
whose checkout sits in a folder of another name, and who forgot ``vault_id``, builds a second copy
of the whole vault beside the team's (the embeddings are shared, the rest is not), and the two
drift: a server reading one never sees writes indexed into the other. Nothing fails, so nothing
said it. After a full build on the PostgreSQL store, ``twin_notice`` looks for another vault's
schema holding most of this vault's notes (the same bytes: their sha256) and says which
``vault_id`` that is and how to set it; looked for once per process and schema (a watcher's later
builds, a read's refresh, do not ask again).

Only the schemas this role may read are looked at (``information_schema`` lists no others), and a
question refused or failed is no notice: this is advice, never a reason for a build to fail.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from .. import pg

log = logging.getLogger(__name__)

MIN_SHARED = 10  # fewer notes in common is no evidence (a new Obsidian vault's Welcome.md, a template)
MIN_SHARE = 0.8  # of this vault's notes found in the other schema

_checked: set[tuple[str, str]] = set()  # (database, schema): looked once per process
_said_lock = threading.Lock()

CANDIDATES = ("SELECT table_schema FROM information_schema.tables WHERE table_name = 'files' "
              "AND table_schema LIKE 'wm\\_%' ORDER BY table_schema")  # no parameters: % is itself


def _vault_schemas(names: list[str], schema: str) -> list[str]:
    """``names`` less ``schema`` and a rebuild's temporary schemas (``<a schema's first 48
    characters>_next_<pid>`` or ``_old_<pid>``, of a schema listed or of ``schema``). Told apart
    by that whole shape, not by the words alone: a vault id may hold ``_next_`` or ``_old_``."""
    live = set(names) | {schema}
    temporary = {n for n in names for s in live if s != n and re.fullmatch(re.escape(s[:48]) + r"_(next|old)_\d+", n)}
    return [n for n in names if n != schema and n not in temporary]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def twins(conn, schema: str) -> list[dict[str, Any]]:
    """Other vault schemas holding at least ``MIN_SHARE`` of ``schema``'s notes (by content):
    [{"schema", "vault_id", "shared", "notes"}], most shared first."""
    ours = conn.execute(f"SELECT count(*) FROM {_q(schema)}.files WHERE note = 1").fetchone()[0]
    if ours < MIN_SHARED:
        return []
    found: list[dict[str, Any]] = []
    for other in _vault_schemas([r[0] for r in conn.execute(CANDIDATES).fetchall()], schema):
        try:
            shared = conn.execute(
                f"SELECT count(*) FROM {_q(schema)}.files o WHERE o.note = 1 AND EXISTS "
                f"(SELECT 1 FROM {_q(other)}.files t WHERE t.sha256 = o.sha256)").fetchone()[0]
            if shared < MIN_SHARED or shared < MIN_SHARE * ours:
                continue
            row = conn.execute(f"SELECT value FROM {_q(other)}.meta WHERE key = 'vault_id'").fetchone()
        except pg.psycopg().Error:  # not ours to read, or not a wikimem schema after all
            continue
        try:
            vault_id = json.loads(row[0]) if row else None
        except ValueError:
            vault_id = None
        found.append({"schema": other, "vault_id": vault_id, "shared": int(shared), "notes": int(ours)})
    return sorted(found, key=lambda t: -t["shared"])


def twin_notice(cache) -> str | None:
    """One line when another vault id in this database holds the same notes as ``cache``'s vault
    (a PostgreSQL store, after a full build); None otherwise, and None once it was said."""
    url, schema = getattr(cache, "url", None), getattr(cache, "schema", None)
    if not url or not schema:
        return None  # a local store
    with _said_lock:  # once per process: every full build (a read's refresh included) would ask again
        if (url, schema) in _checked:
            return None
        _checked.add((url, schema))
    try:
        with pg.connect(url, "the wikimem database") as conn:
            found = twins(conn, schema)
    except Exception as exc:  # noqa: BLE001 - advice only: a build never fails for it
        log.debug("could not look for the same vault under another id: %s", exc)
        return None
    if not found:
        return None
    other = found[0]
    name = other["vault_id"] or other["schema"]
    return (f"the same vault seems to be in this database twice: {other['shared']} of this vault's {other['notes']} "
            f"notes are also under vault_id {name!r} (schema {other['schema']}), and this one is "
            f"{cache.vault_id!r}. If it is the same vault, set vault_id = \"{name}\" in the vault's .wikimem.toml "
            f"(or WIKIMEM_VAULT_ID={name}) on every machine, and drop this copy: DROP SCHEMA {schema} CASCADE; "
            f"DELETE FROM wikimem_schema WHERE component = 'vault:{schema}'")
