"""What a lane shows outside the request path, declared by the lane itself (``LaneSpec``):
its name, whether it runs unless switched off, the options its ``[lanes.NAME]`` table takes,
the per-request header it reads with the values that header accepts, and how the composition
root builds it. Everything outside the lane (the config's tables and ``--lanes``, the server's
headers, ``skillstate config``) is derived from these declarations, in the order of the one
list (``pipeline.lineup``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only the composition root builds a lane, and it has these
    from skillstate.economics.prices import Catalog
    from skillstate.pipeline.lane import Lane
    from skillstate.state.engine import StateEngine


@dataclass(frozen=True, slots=True)
class LaneHeader:
    """A request header that asks something of one lane for that request only
    (``x-skillstate-style: off``). The value, trimmed and lower-cased, must be one of
    ``values``, or the request is refused with a 400 in the client's wire naming them; the
    accepted value reaches the lane as ``LaneContext.extra[<the lane's name>]``."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LaneParts:
    """What the composition root has for a lane to be built from, besides its options: the
    state engine, the price catalog and the clock."""

    engine: StateEngine
    catalog: Catalog
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class LaneSpec:
    """One lane as the rest of the gateway knows it.

    ``name`` is the lane's one name: its ``[lanes.NAME]`` table, its word in ``--lanes``,
    ``SKILLSTATE_LANES`` and ``x-skillstate-lanes``, its key in ``LaneContext.extra`` and in
    the ``x-skillstate-lanes`` response header. ``on``: whether it runs unless its table says
    ``enabled = false`` (a lane is on by default only where the benchmark shows it paying,
    docs/lanes.md). ``idle_off``: the lane changes nothing in mode ``off`` (it acts on the
    state lane's work, or only in a state mode), so a request in mode off that runs no other
    lane is relayed without being decoded (``server.express``); a lane that says so returns
    the request it was given, the same object, whenever the mode is off.
    ``idle_passing``: the lane changes nothing in hybrid mode either while the state lane
    passes the session through before its first boundary (``state.passing``), for a
    request that holds no host's compaction (``state.compaction.may_compact``) and adds no
    tool output as long as the outputs lane views (``state.bulky``: the state lane may offer
    ``recall`` for it): such a request is relayed undecoded too. ``options``: the
    frozen dataclass its table's keys (besides ``enabled``) fill, every field with its default
    and its type (``int``, ``float``, ``bool``, ``str``, ``tuple[str, ...]``), bounds checked
    in ``__post_init__`` with a ``ValueError`` naming the option; None when it takes none.
    ``build(parts, options)`` makes the lane (``options`` is its table's, or the declared
    defaults). ``check`` raises where the lane, switched on, cannot run on this machine (a
    missing extra), before the gateway opens anything."""

    name: str
    build: Callable[[LaneParts, Any], Lane]
    on: bool = False
    idle_off: bool = False
    idle_passing: bool = False
    options: type[Any] | None = None
    header: LaneHeader | None = None
    check: Callable[[], None] | None = None

    def default_options(self) -> Any:
        """The declared defaults (None: the lane takes no options)."""
        return None if self.options is None else self.options()
