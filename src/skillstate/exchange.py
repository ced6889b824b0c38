"""One request through the gateway, as the observers (later: the ledger, the state engine)
see it once the reply has reached the client. Content stays in memory; nothing here is
written anywhere by the gateway core."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skillstate.conversation import Request, Response, Wire


@dataclass(slots=True)
class Exchange:
    session: str
    session_source: str
    client_wire: Wire
    upstream_wire: Wire
    upstream: str
    request: Request
    response: Response | None
    status: int
    streamed: bool
    forwarded_original: bool
    elapsed_s: float
    started: float = 0.0
    first_byte_s: float | None = None
    note: str | None = None


Observer = Callable[[Exchange], None]
