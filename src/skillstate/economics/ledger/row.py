"""One ledger row: one upstream request (or a reply the gateway made itself), no content and
no keys."""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields

from skillstate.economics.exchange import LOCAL

__all__ = ["COLUMNS", "LOCAL", "SUBSCRIPTION", "Row"]

SUBSCRIPTION = "anthropic-subscription"
"""The login whose rows are subscription use: tokens counted, no per-token price. (A ChatGPT
login's rows keep their list price: the same requests with an API key cost that.)"""


@dataclass(frozen=True, slots=True)
class Row:
    """``round`` 0 is the first upstream request made for client request ``request_id``; the
    pass-through estimate (``passthrough_*``) is on that row only, None on later rounds. A
    cost is None when the model has no price. ``estimated``: the counts are the gateway's,
    the provider reported none."""

    ts: float
    request_id: str
    round: int
    session: str
    client_wire: str
    upstream: str
    model: str
    mode: str
    lanes: str
    status: int
    streamed: bool
    input: int = 0
    cached_input: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    output: int = 0
    reasoning: int = 0
    cost_usd: float | None = None
    passthrough_input: int | None = None
    passthrough_cached_input: int | None = None
    passthrough_cache_write: int | None = None
    passthrough_cost_usd: float | None = None
    overhead_ms: float | None = None
    upstream_ms: float | None = None
    cause: str = ""
    """Why this upstream request was made, for rounds after the first: ``state`` (the
    gateway's own state tools: overhead a pass-through would not have) or ``retry``."""
    attempts: str = ""
    """The status of every upstream attempt the client request made, retries and fallbacks
    included, in order (``"503,200"``; 0 for no answer); on round 0 only."""
    estimated: bool = False
    """The provider reported no usage for this reply: the token counts are the gateway's own
    (``economics.metered.counted``) and the cost is priced from them; never zeros."""
    estimate_basis: str = ""
    """On round 0, the assumption the pass-through estimate was made on
    (``economics.cache_evidence.Basis``): ``recorded`` (the request went up as the client sent
    it: the estimate is what was recorded), ``automatic``, ``explicit``, ``observed`` or
    ``no-cache``; empty on later rounds."""
    login: str = ""
    """The kind of credential the client request carried (``protocols.logins.Login``: ``none``,
    ``api-key``, ``gateway-key``, ``anthropic-subscription``, ``chatgpt``); empty on rows an
    older gateway wrote. An ``anthropic-subscription`` row is billed by the subscription, not
    per token: its costs are None and it counts apart from unpriced rows (``SUBSCRIPTION``)."""

    cache_verdict: str = ""
    """Whether the provider's cache served this request, and where it did not, why
    (``economics.cache_verdict``: ``hit``, ``first``, ``expired``, ``client-history``,
    ``boundary``...); empty where not told (the counts are the gateway's own, or the request
    was relayed undecoded and nothing was cached)."""

    def values(self) -> tuple[object, ...]:
        values: tuple[object, ...] = _VALUES(self)
        return values


COLUMNS = tuple(f.name for f in fields(Row))
_VALUES = operator.attrgetter(*COLUMNS)
"""A row's values in column order (``dataclasses.astuple`` copies each value deeply: a
hundred times slower, and a row holds only numbers and strings)."""
