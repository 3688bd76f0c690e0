"""Privileges on the PostgreSQL store: kept across a rebuild, a refusal said as the GRANT it lacks,
and what ``doctor`` checks.

Why: a team gives its search-only processes a role of their own (docs/teams.md, "Roles and
grants"). A full rebuild writes a new schema and swaps it in by renaming, so the grants the old
schema carried (``USAGE`` on it, ``SELECT`` on its tables, its default privileges) would be gone:
the first ``index --rebuild`` locked every reader out, and the reader, seeing no tables, tried to
build and failed on ``CREATE TABLE`` in ``public``, reported as "a wikimem bug". Now the swap
copies the old schema's grants to the new one (``carry``), a role that cannot use its vault's
schema is told so at its first connection (``check_schema``), and a privilege error anywhere is
one line naming the GRANT to run (``MissingGrant``, exit 2: a setting to fix, not a bug).
"""
from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from ..errors import DatabaseUnavailable

log = logging.getLogger(__name__)

SHARED_TABLES = ("wikimem_schema", "wikimem_embeddings")


class MissingGrant(DatabaseUnavailable):
    """The database refused this role something it needs: one line naming the GRANT (exit 2; in
    ``serve`` a 503 without Retry-After, since waiting does not mend it)."""

    lasting = True


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_GRANTEE = "CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END"


@dataclass
class Grants:
    """What a schema grants to roles other than its owner (read before a swap or a drop)."""
    schema: list[tuple[str, str, bool]] = field(default_factory=list)  # (grantee, privilege, grantable)
    tables: list[tuple[str, str, str, bool]] = field(default_factory=list)  # (table, grantee, privilege, grantable)
    defaults: list[tuple[str, str, str, str, bool]] = field(default_factory=list)  # (for role, objtype, grantee, ...)

    def __bool__(self) -> bool:
        return bool(self.schema or self.tables or self.defaults)


def read(conn, schema: str) -> Grants:
    """The grants ``schema`` (and its tables, and its default privileges) carries now."""
    grants = Grants()
    grants.schema = [(g, p, bool(o)) for g, p, o in conn.execute(
        f"SELECT {_GRANTEE}, a.privilege_type, a.is_grantable FROM pg_namespace n, aclexplode(n.nspacl) a "
        "WHERE n.nspname = %s AND a.grantee <> n.nspowner", (schema,)).fetchall()]
    grants.tables = [(t, g, p, bool(o)) for t, g, p, o in conn.execute(
        f"SELECT c.relname, {_GRANTEE}, a.privilege_type, a.is_grantable FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'S') AND a.grantee <> c.relowner "
        "ORDER BY 1, 2, 3", (schema,)).fetchall()]
    grants.defaults = [(r, k, g, p, bool(o)) for r, k, g, p, o in conn.execute(
        f"SELECT quote_ident(pg_get_userbyid(d.defaclrole)), d.defaclobjtype, {_GRANTEE}, a.privilege_type, "
        "a.is_grantable FROM pg_default_acl d JOIN pg_namespace n ON n.oid = d.defaclnamespace, "
        "aclexplode(d.defaclacl) a WHERE n.nspname = %s", (schema,)).fetchall()]
    return grants


_OBJECTS = {"r": "TABLES", "S": "SEQUENCES", "f": "FUNCTIONS", "T": "TYPES"}


def apply(conn, grants: Grants, schema: str, tables: tuple[str, ...] | None = None) -> list[str]:
    """Give ``schema`` the ``grants`` read from another (or from itself before a drop) -> the
    statements that failed (each in a savepoint: one refused default privilege, say of a role this
    one is not a member of, does not undo the rest). ``tables``: only these tables' grants."""
    statements: list[str] = []
    for grantee, privilege, grantable in grants.schema if tables is None else ():
        statements.append(f"GRANT {privilege} ON SCHEMA {_q(schema)} TO {grantee}" +
                          (" WITH GRANT OPTION" if grantable else ""))
    present = {r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (schema,)).fetchall()}
    for table, grantee, privilege, grantable in grants.tables:
        if table in present and (tables is None or table in tables):
            statements.append(f"GRANT {privilege} ON {_q(schema)}.{_q(table)} TO {grantee}" +
                              (" WITH GRANT OPTION" if grantable else ""))
    for role, kind, grantee, privilege, grantable in grants.defaults if tables is None else ():
        if kind in _OBJECTS:
            statements.append(f"ALTER DEFAULT PRIVILEGES FOR ROLE {role} IN SCHEMA {_q(schema)} GRANT {privilege} "
                              f"ON {_OBJECTS[kind]} TO {grantee}" + (" WITH GRANT OPTION" if grantable else ""))
    failed = []
    for statement in statements:
        try:
            with conn.transaction():  # a savepoint inside the caller's transaction
                conn.execute(statement)
        except _driver().Error as exc:
            failed.append(f"{statement}: {' '.join(str(exc).split())}")
    for problem in failed:
        log.warning("a grant of the old tables could not be given again: %s", problem)
    return failed


def carry(conn, old: str, new: str) -> list[str]:
    """Before a rebuild's swap: give schema ``new`` the grants ``old`` carries (-> the failures)."""
    grants = read(conn, old)
    return apply(conn, grants, new) if grants else []


def check_schema(conn, schema: str, user: str | None = None) -> None:
    """MissingGrant when ``schema`` exists and this role may not use it (a reader not yet granted
    it, or one whose grants a rebuild by an older wikimem lost): said before the role, seeing no
    tables, takes the vault for unbuilt and tries to build it."""
    row = conn.execute("SELECT has_schema_privilege(oid, 'USAGE'), current_user FROM pg_namespace "
                       "WHERE nspname = %s", (schema,)).fetchone()
    if row is not None and not row[0]:
        raise MissingGrant(f"role {row[1]} may not use the vault's schema {schema}: as its owner run "
                           f"GRANT USAGE ON SCHEMA {schema} TO {row[1]}; GRANT SELECT ON ALL TABLES IN SCHEMA "
                           f"{schema} TO {row[1]} (docs/teams.md, Roles and grants)")


def _driver():
    import psycopg
    return psycopg


_VERBS = {"SELECT": "SELECT", "INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "TRUNCATE": "TRUNCATE",
          "COPY": "INSERT", "WITH": "SELECT"}


def explain(exc: BaseException, user: str | None = None) -> MissingGrant | None:
    """A psycopg privilege error as one line naming the GRANT that is missing; None for any other
    error. ``user``: the role, when the caller knows it (the error does not carry it)."""
    driver = sys.modules.get("psycopg")
    if driver is None or not isinstance(exc, driver.errors.InsufficientPrivilege):
        return None
    text = str(exc)
    first = " ".join(text.splitlines()[0].split()) if text else "permission denied"
    m = re.search(r"LINE \d+: (.*)", text)
    statement = (m.group(1).strip() if m else "").upper()
    verb = statement.split(" ", 1)[0] if statement else ""
    if "ON CONFLICT" in statement and "DO UPDATE" in statement:
        verb = "UPSERT"
    role = user or "<the role in database_url>"
    fix = None
    if (found := re.search(r'permission denied for schema "?([^"\s]+)', first)):
        schema = found.group(1)
        fix = f"GRANT {'CREATE' if verb == 'CREATE' else 'USAGE'} ON SCHEMA {schema} TO {role}"
        if verb == "CREATE":
            fix += (" (a build makes its tables there; a search-only role builds nothing: run `index` and a "
                    "watching `serve` as the builder's role, the readers' `serve` with --no-watch)")
    elif (found := re.search(r'permission denied for (?:table|relation) "?([^"\s]+)', first)):
        table = found.group(1)
        privilege = "INSERT, UPDATE" if verb == "UPSERT" else _VERBS.get(verb)
        also = ""
        if privilege is None:  # the error does not say what was asked: reading is what every role needs
            privilege, also = "SELECT", "; a role that builds also needs INSERT, UPDATE, DELETE"
        where = "" if table in SHARED_TABLES or table == "wikimem_tokens" else \
            " (a table of the vault's schema: `wikimem status` names it)"
        fix = f"GRANT {privilege} ON {table} TO {role}{where}{also}"
    elif (found := re.search(r'permission denied for database "?([^"\s]+)', first)):
        fix = f"GRANT CREATE ON DATABASE {found.group(1)} TO {role} (a build makes one schema per vault)"
    elif "permission denied to create extension" in first:
        fix = "CREATE EXTENSION vector, once, as a superuser (pgvector is not a trusted extension)"
    elif first.startswith("must be owner of"):
        fix = (f"run it as the role that owns it (the one that ran the first build), or as a superuser: "
               f"ALTER ... OWNER TO {role}")
    if fix is None:
        return MissingGrant(f"the database refused role {role}: {first}")
    return MissingGrant(f"the database refused role {role}: {first}; missing: {fix}")


def user_of(url: str) -> str | None:
    """The role a database URL connects as (libpq's default: the OS user), for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict
        user = conninfo_to_dict(url).get("user")
    except Exception:  # noqa: BLE001 - a message detail only
        user = None
    if not user:
        import getpass
        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001
            return None
    return str(user)


def privileges(conn, schema: str) -> dict[str, Any]:
    """What ``doctor`` reports of this role on the database: pgvector, who it is, what it may do on
    the vault's schema and tables and on the shared tables, and the database's size."""
    ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    who = conn.execute("SELECT current_user, rolsuper, pg_database_size(current_database()), current_database(), "
                       "has_database_privilege(current_database(), 'CREATE') FROM pg_roles "
                       "WHERE rolname = current_user").fetchone()
    info: dict[str, Any] = {"vector": ext[0] if ext else None, "role": who[0], "superuser": bool(who[1]),
                            "database_bytes": int(who[2]), "database": who[3], "create_schema": bool(who[4])}
    row = conn.execute("SELECT pg_get_userbyid(nspowner), has_schema_privilege(oid, 'USAGE') FROM pg_namespace "
                       "WHERE nspname = %s", (schema,)).fetchone()
    info["schema"] = None if row is None else {"owner": row[0], "usage": bool(row[1])}
    if row is not None and row[1]:
        info["unreadable"] = [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND NOT has_table_privilege(c.oid, 'SELECT') "
            "ORDER BY 1", (schema,)).fetchall()]
    shared = {}
    for table in SHARED_TABLES:
        found = conn.execute("SELECT has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'), "
                             "has_table_privilege(c.oid, 'UPDATE') FROM pg_class c WHERE c.oid = to_regclass(%s)",
                             (table,)).fetchone()
        shared[table] = None if found is None else {"select": found[0], "insert": found[1], "update": found[2]}
    info["shared"] = shared
    return info
