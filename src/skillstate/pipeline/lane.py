"""The lane protocol: a small, named function over the canonical request.

A lane reads the request and a read-only context and returns a ``LaneOutcome``: the new request
(the same object when it changed nothing), the archive writes it wants, a report, and a short
``summary`` for the ``x-skillstate-lanes`` header. A lane may also answer the request itself
(``answer``: no upstream call is made, host compaction does this) or ask for the round loop's
help with its own tools (``followup``: the state lane's internal tools and paper envelope).
Content lanes are pure; the state lane is the one that loads and commits Σ, through its engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from skillstate.conversation import Request, Response, ToolCall, Wire
from skillstate.state.mode import Mode
from skillstate.state.rounds import Policy


@dataclass(frozen=True, slots=True)
class LaneContext:
    """What a lane may read besides the request. ``state`` is Σ as loaded for this request;
    ``extra`` carries what the request asked of the lanes by header (``x-skillstate-style``).

    ``kept`` is where, in the request a lane is given, the turns that the epoch's boundary
    kept verbatim sit (``Epoch.kept``): set by the state lane for the lanes after it, in
    hybrid mode once a boundary has collapsed something, empty otherwise. The same messages
    sit there on every request of the epoch, and the boundary request misses the provider's
    cache from the Σ message on anyway: the one place old content may be rewritten (DESIGN.md,
    "Cache-stable rewriting: epochs"), by a pure function of it, so that every later request
    of the epoch sends the same bytes."""

    session: str
    client_wire: Wire
    upstream_wire: Wire
    mode: Mode
    state: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    kept: range = range(0)


@dataclass(frozen=True, slots=True)
class ArchiveWrite:
    """Content a lane took out of the request, to be kept exactly under ``ref``."""

    ref: str
    data: bytes
    session: str
    summary: str = ""


class Followup(Protocol):
    """What the round loop needs from a lane that offered the model tools of its own."""

    @property
    def policy(self) -> Policy: ...

    @property
    def untouched(self) -> bool:
        """Whether the request goes upstream as the client sent it and nothing of the round
        loop is needed: the client's bytes may be forwarded, ``finish`` called after."""
        ...

    @property
    def handover(self) -> Request | None:
        """A round to send before the turn's own, whose reply goes to ``handed_over``."""
        ...

    async def handed_over(self, response: Response | None) -> Request:
        """The handover round's reply (None: it failed): the request the turn sends now."""
        ...

    async def answer(self, call: ToolCall) -> str: ...

    async def check(self, response: Response) -> str | None: ...

    async def finish(self, response: Response | None) -> None: ...

    def verdict(self) -> str | None:
        """What the client should know of the state work, as ``x-skillstate-state`` says it
        (``rejected; reason=...``), or None."""
        ...


@dataclass(slots=True)
class LaneOutcome:
    request: Request
    writes: list[ArchiveWrite] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    answer: Response | None = None
    followup: Followup | None = None
    kept: range | None = None
    """For the lanes after this one: ``LaneContext.kept`` in its request (None: unchanged)."""


class Lane(Protocol):
    name: str

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome: ...
