"""Codex CLI through the gateway over the Responses WebSocket transport (``supports_websockets``
on its provider, as ``skillstate integrate codex`` writes it): the one-call round trip and the
long hybrid loop, every request a frame on one socket, none a ``POST``.

Recorded with Codex 0.171.0 (docs/integrations.md): it opens the socket with a warmup frame
(``generate: false``), sends the turn's first request written out in full and each later one
as ``previous_response_id`` plus the new items, which the gateway writes out again from the
socket's chain before its lanes see them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_support import Invocation, Trip, assert_round_trip, assert_same_wire, round_trip
from test_codex import assert_codex_session, codex_exec
from test_long_loop import assert_long_loop, long_trip

from skillstate.conversation import Wire
from skillstate.server.socket_route import SERVED, WARMED

pytestmark = pytest.mark.e2e

OPENED = "responses socket opened"


def codex_socket(binary: Path, home: Path) -> Callable[[str], Invocation]:
    """``codex exec`` with a provider that speaks the WebSocket transport."""
    return codex_exec(binary, home, provider="\nsupports_websockets = true")


@pytest.fixture(autouse=True)
def socket_log() -> Iterator[None]:
    """The socket's lines (one per frame served) reach the trip's log."""
    logger = logging.getLogger("skillstate.socket")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield
    logger.setLevel(level)


def assert_over_the_socket(trip: Trip) -> None:
    """Codex opened one socket and every exchange was a frame on it: the socket served as
    many responses as the gateway recorded exchanges, after one warmup."""
    report = trip.report()
    assert sum(OPENED in line for line in trip.log) == 1, report
    assert sum(line.endswith(SERVED) for line in trip.log) == len(trip.exchanges), report
    assert sum(line.endswith(WARMED) for line in trip.log) == 1, report
    assert "Reconnecting" not in trip.cli.stderr, report


async def test_codex_round_trip_over_the_socket(codex: Path, tmp_path: Path) -> None:
    trip = await round_trip(codex_socket(codex, tmp_path), mode="off")
    assert_round_trip(trip, source="codex")
    assert_same_wire(trip, Wire.RESPONSES, signal="session-id")
    assert_codex_session(trip)
    assert_over_the_socket(trip)


async def test_codex_long_loop_over_the_socket(codex: Path, tmp_path: Path) -> None:
    """The long hybrid loop (30 shell turns, a boundary, a recall) with every request a frame."""
    trip = await long_trip(codex_socket(codex, tmp_path))
    assert_long_loop(trip, source="codex")
    assert_codex_session(trip)
    assert_over_the_socket(trip)
