"""The package's shape, checked from its source: the facade on top, a typed context below it.

``api.Vault`` is the facade for callers (CLI, MCP, Python users); below it every stage is handed a
``core.Context`` and calls the other stages' functions, never back up into the facade. Imports run
downward through the layers below (type-only imports under ``TYPE_CHECKING`` do not count).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "wikimem"

# lowest first; a module may import its own package and any package of a lower layer
LAYERS = [
    {"caller"},
    {"__init__", "model", "errors", "progress"},
    {"config", "vault", "parse", "llm"},
    {"embed"},
    {"stores"},
    {"core"},
    {"index"},
    {"search", "watch"},
    {"knowledge"},
    {"qa"},
    {"graph", "ingest", "agent"},
    {"compile"},  # sources into pages: reads what ingest wrote, cites as qa does; review gets it from the facade
    {"lint", "doctor"},
    {"api"},
    {"mcp"},
    {"serve"},
    {"cli"},
    {"launch"},
]
FACADE = {"api", "mcp", "serve", "cli", "launch"}


def _layer(unit: str) -> int:
    for i, names in enumerate(LAYERS):
        if unit in names:
            return i
    raise AssertionError(f"wikimem.{unit} is in no layer of tests/test_structure.py: place it")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        name = ".".join(["wikimem", *(parts[:-1] if is_pkg else parts)])
        unit = parts[0] if len(parts) > 1 or not is_pkg else "__init__"
        yield path, name, is_pkg, unit, ast.parse(path.read_text(encoding="utf-8"))


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _imports(name: str, is_pkg: bool, tree: ast.AST):
    """(line, imported module) for every runtime import of a wikimem module."""
    skip = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "wikimem":
                yield from ((node.lineno, f"wikimem.{a.name}") for a in node.names)
            elif target.startswith("wikimem."):
                yield node.lineno, target
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.startswith("wikimem."))


def _unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_imports_run_downward_and_nothing_below_imports_the_facade():
    wrong = []
    for path, name, is_pkg, unit, tree in _modules():
        for line, target in _imports(name, is_pkg, tree):
            other = _unit_of(target)
            if other == unit or other in ("__version__",):
                continue
            if other == "api" and unit not in FACADE:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports the facade ({target})")
            elif _layer(other) >= _layer(unit):
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports upward: {unit} -> {target}")
    assert not wrong, "\n".join(wrong)


def _vault_only_methods() -> set[str]:
    from wikimem.api import Vault
    from wikimem.core import Context
    return {n for n in vars(Vault) if not n.startswith("_")} - {n for n in dir(Context) if not n.startswith("__")}


def test_nothing_below_the_facade_calls_a_vault_method():
    """A stage is handed a Context: a call such as ``ctx.search(...)`` or ``vault.write_page(...)``
    below the facade would reach back up (it fails at run time too, but only on that path)."""
    facade_only = _vault_only_methods()
    assert {"search", "write_page", "index", "query", "lint"} <= facade_only
    wrong = []
    for path, name, is_pkg, unit, tree in _modules():
        if unit in FACADE:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(a.arg == "vault" for a in node.args.args + node.args.kwonlyargs):
                    wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}() takes a `vault`: "
                                 "hand it the Context (`ctx`)")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                owner_name = owner.id if isinstance(owner, ast.Name) else (
                    owner.attr if isinstance(owner, ast.Attribute) else "")
                if owner_name in ("ctx", "vault", "v") and node.func.attr in facade_only:
                    wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} calls {owner_name}.{node.func.attr}()")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("module", ["wikimem.core", "wikimem.index.update", "wikimem.knowledge.writer"])
def test_the_seams_have_docstrings(module):
    import importlib
    assert (importlib.import_module(module).__doc__ or "").strip()


# Modules outside stores/ that still hold SQL, each being rewritten by someone else right now: they
# are to ask the manifest's named questions (stores/manifest_reads.py) too, and leave this list.
SQL_PENDING: set[str] = set()  # modules whose SQL is still being moved behind the stores
SQL_OWNERS = {"stores"}  # the stores; search/ asks them too (stores/manifest_search.py, FaissVectors.searchable_ids)
_SQL_TEXT = re.compile(r"\b(SELECT\s.+\sFROM\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|DELETE\s+FROM\s|UPDATE\s+\w+\s+SET\s|"
                       r"CREATE\s+(TABLE|INDEX|VIRTUAL)\s)", re.S)


def _sql_in(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each statement run on a connection and each SQL statement written out."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("execute", "executemany", "executescript"):
            found.append((node.lineno, f".{node.func.attr}(...)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL_TEXT.search(node.value):
            found.append((node.lineno, repr(node.value[:40])))
    return found


def test_sql_stays_in_the_stores():
    """Only the stores in ``wikimem/stores`` (``Manifest``, ``Lexical``, ``FaissVectors``, the cache
    folder's connections) write SQL: a caller asks a named question (``ctx.cache.manifest.edges_of``),
    so a store can move to another engine (design.md §9) without a hunt through the code base."""
    wrong, pending_with_sql = [], set()
    for path, name, is_pkg, unit, tree in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        if unit in SQL_OWNERS:
            continue
        found = _sql_in(tree)
        if rel in SQL_PENDING:
            pending_with_sql.update([rel] if found else [])
            continue
        wrong += [f"{rel}:{line} {what}" for line, what in found]
    assert not wrong, "SQL outside the stores (ask the manifest a named question):\n" + "\n".join(wrong)
    done = {rel for rel in SQL_PENDING if (PACKAGE / rel).exists()} - pending_with_sql
    assert not done, f"no SQL left in {sorted(done)}: remove them from SQL_PENDING"


def test_the_sql_check_finds_sql():
    assert _sql_in(ast.parse("db.execute('x')\nrows = cache.db.executemany(q, r)")) == [(1, ".execute(...)"),
                                                                                       (2, ".executemany(...)")]
    assert _sql_in(ast.parse("q = 'SELECT path FROM files WHERE note=1'"))
    assert not _sql_in(ast.parse("'''Select the pages from the vault.'''\nx = 'update the index'"))


# -- the stores: one protocol, two engines (issue 50) ----------------------------------------------
def _members(protocol) -> dict[str, object]:
    import typing
    names = set()
    for klass in protocol.__mro__:
        if klass in (object, typing.Protocol, typing.Generic):
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return {n: getattr(protocol, n, None) for n in names}


def _signature_problems(implementation, protocol) -> list[str]:
    """Each member of ``protocol`` on ``implementation``, a method taking the same parameter names."""
    import inspect
    wrong = []
    for name, member in _members(protocol).items():
        if not hasattr(implementation, name):  # an attribute an __init__ of its classes sets
            inits = [vars(k)["__init__"] for k in implementation.__mro__ if "__init__" in vars(k) and k is not object]
            if not any(f"self.{name} =" in inspect.getsource(init) for init in inits):
                wrong.append(f"{implementation.__name__} lacks {name}")
            continue
        ours = inspect.getattr_static(implementation, name, None)
        if callable(member) and callable(ours) and not isinstance(ours, property):
            want = list(inspect.signature(member).parameters)
            have = list(inspect.signature(ours).parameters)
            if have[:len(want)] != want:
                wrong.append(f"{implementation.__name__}.{name}{tuple(have)} is not the protocol's {tuple(want)}")
    return wrong


def test_both_engines_implement_every_part_of_the_stores_protocol():
    from wikimem.stores import protocol
    from wikimem.stores.local.cache import Cache
    from wikimem.stores.local.lexical import Lexical
    from wikimem.stores.local.manifest import LocalManifest
    from wikimem.stores.postgres.cache import PgCache, PgVectors
    from wikimem.stores.postgres.lexical import PgLexical
    from wikimem.stores.postgres.manifest import PgManifest
    from wikimem.stores.local.vectorstore import FaissVectors
    wrong = []
    for manifest in (LocalManifest, PgManifest):
        wrong += _signature_problems(manifest, protocol.ManifestPart)
    for lexical in (Lexical, PgLexical):
        wrong += _signature_problems(lexical, protocol.LexicalIndex)
    for vectors in (FaissVectors, PgVectors):
        wrong += _signature_problems(vectors, protocol.VectorsPart)
    for stores in (Cache, PgCache):
        wrong += _signature_problems(stores, protocol.Stores)
    assert not wrong, "\n".join(wrong)


def test_the_context_holds_the_protocol_not_an_engine():
    import typing

    from wikimem import core
    from wikimem.stores.protocol import Stores
    source = (PACKAGE / "core.py").read_text(encoding="utf-8")
    assert "from .stores.protocol import Stores" in source  # under TYPE_CHECKING: resolve it as a checker does
    hints = typing.get_type_hints(core.Context.cache.fget, {**vars(core), "Stores": Stores})
    assert hints["return"] is Stores
    for module in ("index/build.py", "index/status.py", "index/embedding.py", "lint/context.py"):
        text = (PACKAGE / module).read_text(encoding="utf-8")
        assert "stores.cache" not in text and "stores.local" not in text and "stores.postgres" not in text, module
        assert "import sqlite3" not in text, f"{module}: an engine's errors are the stores' damage_errors"


def test_the_engines_packages_do_not_import_each_other():
    """``stores/local/`` and ``stores/postgres/`` each write their own SQL; neither imports the other
    (what both need stays above them in ``stores/``)."""
    wrong = []
    for path, name, is_pkg, unit, tree in _modules():
        for engine, other in (("wikimem.stores.local", "wikimem.stores.postgres"),
                              ("wikimem.stores.postgres", "wikimem.stores.local")):
            if name == engine or name.startswith(engine + "."):
                wrong += [f"{path.relative_to(PACKAGE)}:{line} imports {target}"
                          for line, target in _imports(name, is_pkg, tree)
                          if target == other or target.startswith(other + ".")]
    assert not wrong, "\n".join(wrong)


def test_no_layer_above_the_stores_names_an_engine_driver():
    """An engine's errors are caught above the stores as ``stores.failures.driver_errors()`` (and said as
    ``in_words``), not as ``sqlite3.Error``: a PostgreSQL error took the generic path wherever a layer
    named SQLite's (an MCP "internal error", a watcher ended)."""
    wrong = []
    for path, name, is_pkg, unit, tree in _modules():
        if name.startswith("wikimem.stores") or name == "wikimem.errors":  # errors: describe_os_error words SQLite's
            continue
        for node in ast.walk(tree):  # any import, a function's too (``_imports`` follows wikimem's only)
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            wrong += [f"{path.relative_to(PACKAGE)}:{node.lineno} imports {n}" for n in names
                      if n.split(".")[0] in ("sqlite3", "psycopg")]
    assert not wrong, "\n".join(wrong)
