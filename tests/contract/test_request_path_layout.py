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


def exchange_writes(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """Every write to an ``Exchange`` (``exchange.status = ...``, ``x.exchange.note = ...``,
    ``exchange.metered.append(...)``) and every ``x.exchange = ...``, with its line."""
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in _unpacked(target)]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "clear")
        ):
            targets = [node.func.value]
        for target in targets:
            if isinstance(target, ast.Attribute) and _names_an_exchange(target):
                yield ast.unparse(target), node.lineno


def _unpacked(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for element in target.elts for t in _unpacked(element)]
    return [target]


def _names_an_exchange(target: ast.Attribute) -> bool:
    if target.attr == "exchange":
        return True
    owner = ast.unparse(target.value)
    return owner.split(".")[-1] == "exchange" or (
        isinstance(target.value, ast.Attribute) and _names_an_exchange(target.value)
    )


def test_only_forward_writes_the_exchange() -> None:
    """The record observers and the ledger get is written by ``Forward``'s named methods (and
    built whole by ``exchange_for`` and ``notify_local``): a route records how its request
    ended through ``Forward.answered``/``failed``, never field by field."""
    found = [
        f"{name}:{line} {target}"
        for name, tree in modules()
        if name != "server/forward.py"
        for target, line in exchange_writes(tree)
    ]
    assert not found, found


def test_the_exchange_rule_sees_what_it_looks_for() -> None:
    seen = dict(modules())
    writes = [target for target, _ in exchange_writes(seen["server/forward.py"])]
    assert "exchange.status" in writes and "self.exchange.note" in writes
    assert "exchange.metered" in writes  # exchange.metered.append(...)
    planted = ast.parse(
        "self.forward.exchange.rounds = 2\nexchange.sent, x = r, 1\nf.exchange = e\n"
        "forward.exchange.attempts.append(0)\n"
    )
    assert [t for t, _ in exchange_writes(planted)] == [
        "self.forward.exchange.rounds",
        "exchange.sent",
        "f.exchange",
        "forward.exchange.attempts",
    ]
