"""Shared machinery of the end-to-end tests: a real agent CLI talks to the gateway, the gateway
to the scripted upstream, and the upstream plays the model with ``AgentPolicy`` (one shell
call, then a final text).

``round_trip`` runs one CLI through the whole chain and returns a ``Trip``: what the CLI
printed, what the upstream heard, what the gateway reported. The ``assert_*`` functions check a
trip and, when they fail, print all of it (``Trip.report``), since a real client that fails
usually says little on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from skillstate.conversation import Request, Wire
from skillstate.economics.exchange import Exchange
from skillstate.economics.ledger.relayed import decoded_request
from skillstate.testing import RecordedRequest, ScriptedUpstream
from skillstate.testing.agents import MARKER, AgentPolicy
from skillstate.testing.gateway import gateway_for

BIN = Path(__file__).resolve().parents[2] / ".cache" / "clients" / "node_modules" / ".bin"
TIMEOUT_S = 120.0
#: What each wire's generation route ends with, as the upstream hears it.
ROUTES = {
    Wire.CHAT: "/v1/chat/completions",
    Wire.RESPONSES: "/v1/responses",
    Wire.MESSAGES: "/v1/messages",
}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TAIL = 3000


def binary(name: str) -> Path:
    """The installed CLI ``name``, or a skip that says how to install it."""
    path = BIN / name
    if not os.access(path, os.X_OK):
        pytest.skip(f"{name} is not installed in {BIN}: run `make clients`")
    return path


def base_env(home: Path) -> dict[str, str]:
    """An environment built from scratch: the search path and a throwaway HOME, nothing of the
    developer's (no keys, no config)."""
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}


@dataclass(frozen=True, slots=True)
class Invocation:
    """How to start one CLI run."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path


@dataclass(frozen=True, slots=True)
class Finished:
    """How a CLI run ended; ``returncode`` None means it was killed at the timeout."""

    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float


async def run_cli(invocation: Invocation, limit_s: float = TIMEOUT_S) -> Finished:
    """Run the CLI without blocking the loop (the gateway and the upstream serve on it), stdin
    closed. Output goes to files, not pipes: a child that outlives the CLI and keeps its
    output open must not make a finished run look hung. The process group is killed
    afterwards, so nothing the CLI started outlives the test."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = await asyncio.create_subprocess_exec(
            *invocation.argv,
            cwd=invocation.cwd,
            env=dict(invocation.env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            returncode: int | None = await asyncio.wait_for(proc.wait(), limit_s)
        except TimeoutError:
            returncode = None
        elapsed = time.perf_counter() - started
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        stdout, stderr = (_read(file) for file in (out, err))
    return Finished(returncode, stdout, stderr, elapsed)


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


class _Collector(logging.Handler):
    """Keeps the gateway's log lines of one trip for the failure report."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


@contextlib.contextmanager
def gateway_log() -> Iterator[list[str]]:
    """The gateway's log lines (``skillstate`` and its children) while inside."""
    collector = _Collector()
    logger = logging.getLogger("skillstate")
    logger.addHandler(collector)
    try:
        yield collector.lines
    finally:
        logger.removeHandler(collector)


@dataclass(slots=True)
class Trip:
    """One CLI run through the gateway: the CLI's end, the upstream's requests, the gateway's
    exchanges and log, and what the policy did."""

    wire: str
    cli: Finished
    upstream: ScriptedUpstream
    policy: AgentPolicy
    exchanges: list[Exchange] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    #: ``engine.describe`` of each session (None: nothing kept), taken when the CLI had finished.
    states: dict[str, Any] = field(default_factory=dict)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The upstream's requests on a generation route (no model listing, no probes)."""
        return [r for r in self.upstream.requests if r.wire is not None]

    def report(self) -> str:
        """Everything a reader needs to see why a trip failed."""
        cli = self.cli
        lines = [
            f"upstream wire {self.wire}; CLI rc={cli.returncode} after {cli.elapsed_s:.1f} s",
            f"--- stdout (tail) ---\n{_tail(cli.stdout)}",
            f"--- stderr (tail) ---\n{_tail(cli.stderr)}",
            "--- upstream requests ---",
            *(_describe(request) for request in self.upstream.requests),
            f"upstream policy errors: {self.upstream.errors!r}",
            f"policy calls: {self.policy.calls}",
            f"policy tool outputs: {self.policy.outputs}",
            f"policy side requests: {self.policy.side}",
            "--- gateway exchanges ---",
            *(_exchange(exchange) for exchange in self.exchanges),
            "--- gateway log ---",
            *self.log,
        ]
        return "\n".join(lines)


async def round_trip(
    invocation: Callable[[str], Invocation],
    *,
    wire: str = "auto",
    mode: str = "hybrid",
    limit_s: float = TIMEOUT_S,
    policy: AgentPolicy | None = None,
    collapse: dict[str, Any] | None = None,
) -> Trip:
    """Start the upstream (playing ``policy``, an ``AgentPolicy()`` by default) and a gateway
    in front of it (``wire`` as ``gateway_for`` takes it, in state ``mode``), run the CLI built
    by ``invocation(gateway_url)``, and stop both. The state engine's description of each
    session is taken before the gateway stops (its data directory goes with it); everything
    else is asserted after, so its last exchange has been reported. ``collapse``: the
    ``[collapse]`` options (``TOOLS_AT_ONCE`` offers the internal tools from the first
    request, where the default waits for the session's first boundary)."""
    policy = AgentPolicy() if policy is None else policy
    states: dict[str, Any] = {}
    exchanges: list[Exchange] = []
    with gateway_log() as lines:
        async with ScriptedUpstream(policy) as upstream:
            settings: dict[str, Any] = {"mode": mode}
            if collapse is not None:
                settings["collapse"] = collapse
            async with gateway_for(upstream.url, wire=wire, settings=settings) as gateway:
                gateway.context.observers.append(exchanges.append)
                finished = await run_cli(invocation(gateway.url), limit_s)
                engine = gateway.context.engine
                for session in {exchange.session for exchange in exchanges}:
                    states[session] = await engine.describe(session) if engine else None
    return Trip(wire, finished, upstream, policy, exchanges, lines, states)


def assert_round_trip(trip: Trip, source: str) -> None:
    """The CLI finished its task with one tool round trip through the gateway: it exited 0 and
    printed the final text, the tool ran (its output reached the upstream), the result came
    back under the call id the upstream generated, and the gateway put every request in one
    session taken from the client's own signal."""
    report = trip.report()
    assert trip.cli.returncode == 0, report
    assert trip.policy.final_text in trip.cli.stdout, report
    assert len(trip.policy.calls) == 1, report
    call = trip.policy.calls[0]
    answered = [out for out in trip.policy.outputs if out.call_id == call.id]
    assert answered, f"no tool result for {call.id!r}\n{report}"
    assert any(MARKER in out.text for out in answered), report
    assert len(trip.exchanges) == len(trip.model_requests) >= 2, report
    assert all(exchange.status == 200 and exchange.streamed for exchange in trip.exchanges), report
    assert {exchange.session_source for exchange in trip.exchanges} == {source}, report
    assert len({exchange.session for exchange in trip.exchanges}) == 1, report


def assert_same_wire(trip: Trip, wire: Wire, signal: str) -> None:
    """Client and upstream speak ``wire``: the gateway forwarded the client's own bytes, and
    its headers, among them the ``signal`` header whose value the gateway took as the
    session."""
    report = trip.report()
    for exchange in trip.exchanges:
        assert (exchange.client_wire, exchange.upstream_wire) == (wire, wire), report
        assert exchange.forwarded_original, report
    assert {request.wire for request in trip.model_requests} == {wire}, report
    heard = {request.headers.get(signal) for request in trip.model_requests}
    assert heard == {exchange.session for exchange in trip.exchanges}, report


def assert_translated(trip: Trip, client: Wire, upstream: Wire) -> None:
    """The client spoke ``client``, the upstream heard only ``upstream`` on its own route."""
    report = trip.report()
    for exchange in trip.exchanges:
        assert (exchange.client_wire, exchange.upstream_wire) == (client, upstream), report
        assert not exchange.forwarded_original, report
    for request in trip.model_requests:
        assert request.wire is upstream, report
        assert request.path == ROUTES[upstream], report


def _tail(text: str) -> str:
    clean = _ANSI.sub("", text)
    return clean if len(clean) <= _TAIL else "…" + clean[-_TAIL:]


def _describe(request: RecordedRequest) -> str:
    """One line per upstream request: route, size, tools and the shape of its last item."""
    body = request.json if isinstance(request.json, dict) else {}
    tools = body.get("tools")
    items = body.get("input") if request.wire is Wire.RESPONSES else body.get("messages")
    last = items[-1] if isinstance(items, list) and items else None
    shape = _shape(last)
    count = len(tools) if isinstance(tools, list) else 0
    return (
        f"#{request.index} {request.method} {request.path} wire={request.wire} "
        f"{len(request.body)} B, {count} tools, last item {shape}"
    )


def _shape(item: object) -> str:
    if not isinstance(item, dict):
        return repr(item)[:200]
    content = item.get("content")
    kinds = (
        [block.get("type") for block in content if isinstance(block, dict)]
        if isinstance(content, list)
        else type(content).__name__
    )
    return f"type={item.get('type')} role={item.get('role')} content={kinds}"


def client_request(exchange: Exchange) -> Request:
    """The client's request of ``exchange``, decoded here where it was relayed undecoded."""
    if exchange.request is not None:
        return exchange.request
    assert exchange.relayed is not None
    request = decoded_request(exchange.client_wire, exchange.relayed.body)
    assert request is not None
    return request


def _exchange(exchange: Exchange) -> str:
    wires = f"{exchange.client_wire}->{exchange.upstream_wire}"
    return (
        f"session={exchange.session} ({exchange.session_source}) {wires} "
        f"status={exchange.status} streamed={exchange.streamed} "
        f"original={exchange.forwarded_original} note={exchange.note}"
    )


TOOLS_AT_ONCE = {"passthrough_until_boundary": False}
"""``[collapse]`` for a session offered the internal tools from its first request."""


def assert_state_lane(trip: Trip) -> None:
    """Hybrid mode engaged: every model request of the agent's loop (those offering tools; a
    title request offers none and passes untouched) offered the gateway's own ``skill_state``
    and ``recall`` tools beside the client's, and the client never saw them."""
    report = trip.report()
    looped = [r for r in trip.model_requests if isinstance(r.json, dict) and r.json.get("tools")]
    assert looped, report
    for request in looped:
        names = json.dumps(request.json["tools"])
        assert '"skill_state"' in names and '"recall"' in names, report
    assert "skill_state" not in trip.cli.stdout, report
