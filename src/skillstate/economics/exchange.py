"""One request through the gateway, as the observers (later: the ledger) see it once the
reply has reached the client. Content stays in memory; nothing here is written anywhere by
the gateway core."""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from skillstate.conversation import Request, Response, Usage, Wire
from skillstate.economics.metered import Metered
from skillstate.protocols.logins import Login
from skillstate.protocols.tails import TailReply
from skillstate.support.trace import Trace

LOCAL = "local"
"""The upstream an exchange answered by the gateway itself names (nothing went upstream): the
ledger's rows keep it, and count them apart from upstream requests."""


@dataclass(slots=True)
class Relayed:
    """A request passed through as its bytes, never decoded (``server.express``), and the
    reply the client got, as bytes too: the recorder reads what it needs of them later."""

    body: bytes
    """The client's request body, as it came and went upstream."""
    reply: TailReply | None = None
    """None: no reply reached the client."""
    read: tuple[list[tuple[Usage, bool]], str] | None = field(default=None, repr=False)
    """The reply's counts and model, once read from its bytes (``ledger.relayed``'s
    ``replies_counted``): the ledger and a key's budget both need them."""


@dataclass(slots=True)
class Exchange:
    session: str
    session_source: str
    client_wire: Wire
    upstream_wire: Wire
    upstream: str
    request: Request | None
    """The client's request, decoded; None where it was relayed as bytes (``relayed``)."""
    response: Response | None
    status: int
    streamed: bool
    forwarded_original: bool
    elapsed_s: float
    started: float = 0.0
    first_byte_s: float | None = None
    note: str | None = None
    mode: str = "off"
    lanes: str = ""
    """What the lanes did, as the ``x-skillstate-lanes`` header says it."""
    rounds: int = 1
    """Upstream requests made for this client request (0: answered by the gateway)."""
    attempts: list[int] = field(default_factory=list)
    """The status of every upstream attempt, retries included (0: no answer)."""
    metered: list[Metered] = field(default_factory=list)
    """Each upstream reply's usage (None where its provider reported none) with what the
    ledger counts it by then, in order (the internal tool loop's rounds each have one); empty
    when no reply came."""
    causes: list[str] = field(default_factory=list)
    """Why each upstream request after the first was made (``state``: to continue after the
    gateway answered internal calls; ``retry``: paper mode's correction)."""
    round_tools: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """For each ``state`` round (its index in ``causes``), the internal tools answered before
    it (``state.rounds.Rounds.tools``)."""
    sent: Request | None = None
    """The request as the lanes left it, sent in the first round (None: the client's own)."""
    request_id: str = field(default_factory=lambda: new_request_id())
    overhead_s: float | None = None
    """The gateway's own time: from arrival to the reply, less the time upstreams took."""
    upstream_s: float = 0.0
    """Time spent waiting on upstreams (every attempt, retries' waits included)."""
    login: Login = Login.NONE
    """The kind of credential the client's request carried (``protocols.logins``)."""
    model: str = ""
    """The model the client asked for (by default the decoded request's)."""
    relayed: Relayed | None = None
    """The request and its reply as bytes, where neither was decoded (``request`` None)."""
    trace: Trace | None = None
    """The request's trace as it went (``server.tracing``); None: tracing is off."""

    def __post_init__(self) -> None:
        if not self.model and self.request is not None:
            self.model = self.request.model

    def summary(self) -> str:
        """The request in one log line: who, where, what came back, what the lanes did."""
        usage = self.response.usage if self.response is not None else None
        if self.relayed is not None and self.relayed.reply is not None:
            usage = self.relayed.reply.usage()[0]  # read here only when the line is written
        tokens = f"in={usage.input} out={usage.output}" if usage is not None else "in=? out=?"
        wires = f"{self.client_wire.value}->{self.upstream_wire.value}"
        lanes = f" lanes[{self.lanes}]" if self.lanes else ""
        rounds = f" rounds={self.rounds}" if self.rounds != 1 else ""
        retried = len(self.attempts) - max(self.rounds, 1)
        rounds += f" retries={retried}" if retried > 0 else ""
        note = f" ({self.note})" if self.note else ""
        return (
            f"session={self.session} login={self.login.value} mode={self.mode} {wires} "
            f"upstream={self.upstream} "
            f"status={self.status} {tokens}{rounds}{lanes} {self.elapsed_s * 1000:.1f}ms{note}"
        )


Observer = Callable[[Exchange], None]

_PROCESS = secrets.token_hex(8)
_NUMBERS = itertools.count()


def _redraw() -> None:
    """A forked child draws its own half: two processes never count from one."""
    global _PROCESS
    _PROCESS = secrets.token_hex(8)


os.register_at_fork(after_in_child=_redraw)


def new_request_id() -> str:
    """A request's id: 32 hex digits, unique across processes (a random half drawn once per
    process, then a count): as unique as a random UUID, without a system call per request."""
    return f"{_PROCESS}{next(_NUMBERS):016x}"
