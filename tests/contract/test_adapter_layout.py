"""The three adapters are laid out alike (STYLE.md, rules 1 and 5): one vocabulary of field
checks, ``protocols/fields.py``, shared by all of them, and one module name, ``foreign.py``, for
building a wire's body from a request of another wire, which each ``encode_request`` hands such
a request to.

Read from the syntax tree, so prose in docstrings and comments does not count."""

from __future__ import annotations

import ast
from pathlib import Path

PROTOCOLS = Path(__file__).resolve().parents[2] / "src" / "skillstate" / "protocols"
ADAPTERS = sorted(path.parent for path in PROTOCOLS.glob("*/__init__.py"))
#: Module names of per-adapter field helpers, which ``protocols/fields.py`` replaces.
HELPER_MODULES = ("fields.py", "checks.py")


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def defined(module: ast.Module) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments)."""
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


SHARED = {name for name in defined(tree(PROTOCOLS / "fields.py")) if not name.startswith("_")}


def test_each_adapter_has_a_foreign_module_that_its_request_encoder_uses() -> None:
    for adapter in ADAPTERS:
        foreign = adapter / "foreign.py"
        assert foreign.is_file(), f"{adapter.name} has no foreign.py"
        module = tree(foreign)
        assert ast.get_docstring(module), f"{adapter.name}/foreign.py says not what it reshapes"
        assert "encode_foreign" in defined(module), f"{adapter.name}/foreign.py"
        imports = [
            node
            for node in ast.walk(tree(adapter / "request.py"))
            if isinstance(node, ast.ImportFrom)
            and node.module == f"skillstate.protocols.{adapter.name}.foreign"
        ]
        assert any(alias.name == "encode_foreign" for node in imports for alias in node.names), (
            f"{adapter.name}/request.py does not hand another wire's request to foreign.py"
        )


def test_no_adapter_keeps_its_own_field_helpers() -> None:
    found = [
        f"{adapter.name}/{name}"
        for adapter in ADAPTERS
        for name in HELPER_MODULES
        if (adapter / name).exists()
    ]
    assert not found, found


def test_no_adapter_redefines_a_shared_helper() -> None:
    found = [
        f"{path.relative_to(PROTOCOLS).as_posix()}: {name}"
        for adapter in ADAPTERS
        for path in sorted(adapter.glob("*.py"))
        for name in sorted(defined(tree(path)) & SHARED)
    ]
    assert not found, found


def test_the_rules_see_what_they_look_for() -> None:
    """The checks above read the adapters and helpers they claim to read."""
    assert [adapter.name for adapter in ADAPTERS] == [
        "anthropic_messages",
        "openai_chat",
        "openai_responses",
    ]
    assert {"fail", "at", "need_object", "required_str", "optional_int", "without"} <= SHARED
    assert "encode_request" in defined(tree(PROTOCOLS / "openai_chat" / "request.py"))
