"""The request path is one thing (DESIGN.md, "The request path"): only ``server/`` opens HTTP
responses, only ``server/client_stream.py`` opens a streamed one, and only
``server/forward.py`` calls an upstream (through ``upstream/client.py``, the transport). The
scripted upstream and the benchmark's mock provider are servers of their own and are left out.

Read from the syntax tree, so prose in docstrings and comments does not count."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "skillstate"
FAKES = ("testing", "bench")


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.split("/")[0] in FAKES:
            continue
        yield relative, ast.parse(path.read_text(), filename=relative)


def calls(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """(the callee's object text, attribute or function name, line) of every call."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            yield ast.unparse(func.value), func.attr, node.lineno
        elif isinstance(func, ast.Name):
            yield "", func.id, node.lineno


RESPONSES = {"Response", "StreamResponse", "json_response", "FileResponse"}


def test_only_server_opens_http_responses() -> None:
    found = [
        f"{name}:{line} {owner}.{attr}()"
        for name, tree in modules()
        for owner, attr, line in calls(tree)
        if attr in RESPONSES and owner in ("web", "aiohttp.web") and not name.startswith("server/")
    ]
    assert not found, found


def test_only_the_client_stream_opens_a_streamed_response() -> None:
    found = [
        f"{name}:{line}"
        for name, tree in modules()
        for owner, attr, line in calls(tree)
        if attr == "StreamResponse" and name != "server/client_stream.py"
    ]
    assert not found, found


def test_only_forward_calls_an_upstream() -> None:
    """Every call of the pooled client's ``post``/``get``/``request`` and every new aiohttp
    client session lives in ``server/forward.py`` (and the transport itself). ``cli/`` talks
    to the gateway's own routes, never to a provider; ``skillstate doctor`` asks whether the
    gateway and each upstream answer at all (a bare GET, no credential: nothing is forwarded)."""
    allowed = {"server/forward.py", "upstream/client.py", "cli/doctor/network.py"}
    found = []
    for name, tree in modules():
        if name in allowed or name.startswith("cli/"):
            continue
        for owner, attr, line in calls(tree):
            upstream_call = attr in ("post", "get", "request") and owner.endswith("client")
            session = attr == "ClientSession"
            if upstream_call or session:
                found.append(f"{name}:{line} {owner}.{attr}()")
    assert not found, found


def test_the_rules_see_what_they_look_for() -> None:
    """The checks above would catch a violation (they read the code they claim to read)."""
    seen = {name: list(calls(tree)) for name, tree in modules()}
    assert any(a == "StreamResponse" for _, a, _ in seen["server/client_stream.py"])
    assert any(a == "post" and o.endswith("client") for o, a, _ in seen["server/forward.py"])
    assert any(a == "Response" and o == "web" for o, a, _ in seen["server/turn.py"])
