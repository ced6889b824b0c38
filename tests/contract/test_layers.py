"""The house's layers (docs/architecture.md): the top-level packages of ``src/skillstate``, each
on a layer, import only from layers below their own, so the import graph between them has no
circle. Read from the syntax tree: every ``import`` and ``from ... import`` counts, at module
level or inside a function or ``TYPE_CHECKING``, relative ones resolved; docstrings do not.

A new top-level package takes a layer here (at most 18 entries under ``src/skillstate``); an
import upward fails with the file and line that made it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "skillstate"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("conversation", "support"),
    ("protocols", "storage", "upstream"),
    ("economics", "archive"),
    ("outputs",),
    ("state",),
    ("pipeline",),
    ("config",),
    ("mcp",),
    ("server", "integrations"),
    ("gateway",),
    ("testing",),
    ("bench",),
    ("cli",),
)
"""Bottom first: a package may import the packages of the layers before its own, and no
other (siblings on one layer do not import each other)."""

RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def entries() -> list[str]:
    """The names directly under the package (modules without ``.py``), but its dunders."""
    return sorted(
        path.name.removesuffix(".py")
        for path in PACKAGE.iterdir()
        if not path.name.startswith(("__", "."))
        and (path.suffix == ".py" or (path / "__init__.py").exists())
    )


def imported(path: Path, tree: ast.Module, package: Path) -> Iterator[tuple[str, int]]:
    """The top-level package of every skillstate import in ``tree``, with its line."""
    here = path.relative_to(package).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here[: len(here) - node.level]
                module = ".".join(("skillstate", *base, *(node.module or "").split(".")))
                names = [module.rstrip(".")]
            else:
                module = node.module or ""
                names = [module]
                if module == "skillstate":
                    names = [f"skillstate.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "skillstate" and len(parts) > 1:
                yield parts[1], node.lineno


def upward(package: Path = PACKAGE) -> list[str]:
    """Every import of a package from a layer not below the importer's."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        source = relative.parts[0].removesuffix(".py")
        if source.startswith("__"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for target, line in imported(path, tree, package):
            if target == source or target.startswith("__") or target not in RANK:
                continue
            if RANK[target] >= RANK[source]:
                found.append(f"{relative}:{line} {source} -> {target}")
    return found


def test_every_top_level_package_has_a_layer_and_there_are_few() -> None:
    names = entries()
    assert len(names) <= 18, names
    assert sorted(RANK) == names


def test_no_package_imports_upward_or_sideways() -> None:
    found = upward()
    assert not found, "\n".join(found)


def test_the_rule_sees_an_upward_import(tmp_path: Path) -> None:
    """A planted upward import (state importing config, the circle that was) is found, in
    every form an import can take."""
    for line in (
        "from skillstate.config import Settings",
        "import skillstate.config.values",
        "from skillstate import config",
        "def f():\n    from skillstate.server import forward",
        "from ...config import values",
    ):
        root = tmp_path / line.split()[1].replace(".", "_")[:20] / "skillstate"
        (root / "state" / "sub").mkdir(parents=True)
        (root / "state" / "sub" / "planted.py").write_text(line + "\n")
        [found] = upward(root)
        assert found.startswith("state/sub/planted.py:"), found
        assert found.split()[-1] in ("config", "server"), found
