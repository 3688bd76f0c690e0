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
