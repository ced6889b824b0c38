"""The lane protocol: a small, named, pure function over the canonical request.

A lane reads the request and a read-only context and returns a ``LaneOutcome``: the new request
(the same object when it changed nothing), the archive writes it wants, and a short report.
Lanes never do I/O; the runner performs their writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from skillstate.conversation import Request, Wire


@dataclass(frozen=True, slots=True)
class LaneContext:
    """What a lane may read besides the request. ``state`` is Σ as loaded for this request;
    ``extra`` carries what a lane's preparation loaded for it (its epoch, say)."""

    session: str
    client_wire: Wire
    upstream_wire: Wire
    mode: str
    state: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ArchiveWrite:
    """Content a lane took out of the request, to be kept exactly under ``ref``."""

    ref: str
    data: bytes
    session: str
    summary: str = ""


@dataclass(slots=True)
class LaneOutcome:
    request: Request
    writes: list[ArchiveWrite] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


class Lane(Protocol):
    name: str

    def __call__(self, request: Request, context: LaneContext) -> LaneOutcome: ...
