"""The state engine's records: its configuration (``EngineConfig``) and one request as it
took it (``Prepared``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from skillstate.conversation import Json, Request, Wire
from skillstate.state.boundary import Decision
from skillstate.state.epoch_record import Epoch
from skillstate.state.epochs import CachePrices, upstream_prices
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions
from skillstate.state.schema import StateSchema
from skillstate.storage.protocols import StateRecord

PriceLookup = Callable[[str, Wire], CachePrices]
"""The cache prices of a model on an upstream wire, relative to its input price: built from the
price catalog by the composition root (``gateway.build_engine``), so the engine does no I/O."""


def wire_prices(model: str, wire: Wire) -> CachePrices:
    """The wire's default cache prices whatever the model (``epochs.upstream_prices``)."""
    return upstream_prices(wire)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    schema: StateSchema
    options: CollapseOptions
    initial_state: Json = field(default_factory=dict)
    prices: PriceLookup = wire_prices
    max_internal_rounds: int = 4
    paper_retries: int = 2


@dataclass(slots=True)
class Prepared:
    """One request taken by the engine: what goes upstream, and what to remember about it."""

    session: str
    mode: Mode
    client: Request
    request: Request
    record: StateRecord
    epoch: Epoch | None
    report: Json
    internal: dict[str, str] = field(default_factory=dict)
    """The internal tools as offered in ``request``: offered name -> which tool."""
    upstream: Wire = Wire.CHAT
    """The upstream's wire, which the request was rendered for."""
    handover: Request | None = None
    """The handover round to send before ``request``, at a passed-through session's first
    boundary (``state.handover``); ``hand_over`` takes its reply and renders ``request`` anew."""
    decision: Decision | None = None
    """Hybrid mode's boundary decision (the turns and where they went)."""
    rejected: str | None = None
    """Why a patch of this request was refused, when one was (for the client's
    ``x-skillstate-state`` and the ledger): paper mode's envelope, cleared when a retry fixed
    it; hybrid mode's ``skill_state`` call, kept when a later round's patch applied."""
