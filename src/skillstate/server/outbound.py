"""One upstream call as ``server.forward`` makes it: where, what, and what may be done with its
reply before the client sees any of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from skillstate.conversation import Profile, Wire
from skillstate.server.replies import Reply


@dataclass(frozen=True, slots=True)
class Outbound:
    """One upstream call: ``path`` on the upstream in its ``wire``; ``body`` None is a GET."""

    path: str
    body: bytes | None
    query: str = ""
    timeout: float | None = None
    probe: bool = False
    """A health probe: tried once, outside the circuit breaker (it neither waits for it nor
    moves it, so /health reports the circuit as the requests left it)."""
    optional: bool = False
    """A round the turn can do without (the handover): tried once, outside the circuit
    breaker, never on a fallback, so its failure costs the client's own round nothing."""
    render: Callable[[Wire, Profile], tuple[str, bytes]] | None = None
    """The call for an upstream of another wire or profile (path, body), so a fallback of
    that wire can serve it; None: only fallbacks of the same wire can, with the same body."""
    settle: Callable[[Reply], Awaitable[None]] | None = None
    """Read (part of) the reply before ``send`` yields it, while nothing of it reached the
    client: an ``UpstreamFailure`` it raises that is ``retryable`` (a body cut short) is tried
    again like any failure before the reply (``read_whole``)."""
