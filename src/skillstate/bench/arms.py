"""The benchmark's arms and pricings: how each run reaches the simulated provider, and what
the provider charges (../shared/BENCH.md, "Arms").

Every arm but ``direct`` runs the real gateway on a loopback port; only its settings differ.
Three arms differ in their *client*, with the gateway passing everything through:
``sliding-window`` keeps only its last ``window`` turns (the task stays), to show what is lost
without Σ and the archive; ``memory`` and ``stateful`` are the SKILL.state paper's baselines
(its appendix A.2 and A.3): the client carries the model's own notes (it asks for them
rewritten whole at the end of every reply, ``bench.workload.with_notes``) and shows them with
each step's instruction, beside its 3 most recent turns (``memory``: a summary plus the
recent turns) or the whole history (``stateful``: state plus the full history). ``passthrough``
is the paper's ReAct baseline (A.1) and ``paper`` its SKILL.state (A.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from skillstate.conversation import Wire
from skillstate.economics.prices import builtin_catalog
from skillstate.pipeline.lineup import LANES
from skillstate.state.schema import default_agent_shapes
from skillstate.testing.billing import Prices

SLIDING_WINDOW_TURNS = 6
"""Turns the ``sliding-window`` client keeps (the task and system prompt always stay)."""
MEMORY_TURNS = 3
"""Turns the ``memory`` client keeps beside its notes (the paper's "3 most recent")."""

_LANES_OFF = {spec.name: {"enabled": False} for spec in LANES}
_REPLACED = [f"{key}:replace" for key in default_agent_shapes()]
"""The default agent schema's keys, each replaced by a patch (RFC 7386, no merge rule)."""
_ONLY_SCHEMAS = {spec.name: {"enabled": spec.name == "schemas"} for spec in LANES}


@dataclass(frozen=True, slots=True)
class Arm:
    """``gateway`` settings (as ``testing.gateway.gateway_for`` takes them; None: the client
    talks to the provider directly), the client's ``window`` in turns (None: all) and whether
    it carries the model's ``notes`` (the paper's baselines)."""

    name: str
    gateway: Mapping[str, Any] | None = field(default=None)
    window: int | None = None
    note: str = ""
    notes: bool = False
    default: bool = True
    """Run when no arm is named (the paper's baselines are run by ``bench table1``, on the
    workload whose model keeps notes, or when named)."""


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("direct", None, note="the client straight to the provider"),
        Arm("passthrough", {"mode": "off", "lanes": _LANES_OFF}, note="the gateway, lanes off"),
        Arm(
            "schemas",
            {"mode": "off", "lanes": _ONLY_SCHEMAS},
            note="pass-through with the tools' schemas compacted (the schemas lane alone)",
        ),
        Arm("paper", {"mode": "paper"}, note="every request is (P, Σ, O)"),
        Arm(
            "hybrid",
            {"mode": "hybrid"},
            note="Σ and the archive, rewritten at epochs, with the default lanes",
        ),
        Arm(
            "hybrid-schemas",
            {"mode": "hybrid", "lanes": {"schemas": {"enabled": True}}},
            note="hybrid with the tools' schemas compacted (the schemas lane)",
        ),
        Arm(
            "hybrid-style",
            {"mode": "hybrid", "lanes": {"style": {"enabled": True}}},
            note="hybrid with the concise-output instruction (the style lane)",
        ),
        Arm(
            "hybrid-effort",
            {"mode": "hybrid", "lanes": {"effort": {"enabled": True}}},
            note="hybrid with effort routing (the effort lane; for models that take one)",
        ),
        Arm(
            "hybrid-no-outputs",
            {"mode": "hybrid", "lanes": {"outputs": {"enabled": False}}},
            note="hybrid with bulky tool outputs left whole (the outputs lane off)",
        ),
        Arm(
            "hybrid-no-rules",
            {"mode": "hybrid", "schema": _REPLACED},
            note="hybrid with every key of Σ replaced by a patch (no merge rules)",
        ),
        Arm(
            "hybrid-vision",
            {"mode": "hybrid", "lanes": {"vision": {"enabled": True}}},
            note="hybrid with dense old tool outputs sent as page images (the vision lane)",
        ),
        Arm(
            "hybrid-no-epochs",
            {"mode": "hybrid", "collapse": {"every_request": True}},
            note="hybrid rewriting on every request: cache-blind",
        ),
        Arm(
            "sliding-window",
            {"mode": "off", "lanes": _LANES_OFF},
            window=SLIDING_WINDOW_TURNS,
            note=f"the client keeps its last {SLIDING_WINDOW_TURNS} turns; no Σ, no archive",
        ),
        Arm(
            "memory",
            {"mode": "off", "lanes": _LANES_OFF},
            window=MEMORY_TURNS,
            note=f"the paper's Memory: the model's notes and the last {MEMORY_TURNS} turns",
            notes=True,
            default=False,
        ),
        Arm(
            "stateful",
            {"mode": "off", "lanes": _LANES_OFF},
            note="the paper's Stateful: the model's notes and the whole history",
            notes=True,
            default=False,
        ),
    )
}
"""Every arm, in the order the bench runs and reports them."""
DEFAULT_ARMS = tuple(name for name, arm in ARMS.items() if arm.default)
"""The arms ``bench run`` runs when none is named."""

BASELINE = "passthrough"
"""The arm every saving is measured against."""


class Pricing(StrEnum):
    """Whose cache and prices the provider bills with."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"

    @property
    def model(self) -> str:
        return "gpt-4.1" if self is Pricing.OPENAI else "claude-sonnet-4-5"

    @property
    def wire(self) -> Wire:
        """The wire its clients speak by default: Chat (automatic caching) for OpenAI,
        Messages (breakpoints on the system prompt and the newest message) for Anthropic."""
        return Wire.CHAT if self is Pricing.OPENAI else Wire.MESSAGES

    def prices(self) -> Prices:
        """The catalog's rates of ``model``, as the simulated provider takes them."""
        price = builtin_catalog().price(self.model)
        if price is None:
            raise LookupError(f"the price catalog has no {self.model}")
        return Prices(
            input=float(price.input),
            output=float(price.output),
            cached=float(price.cached_input),
            cache_write_5m=float(price.write_5m),
            cache_write_1h=float(price.write_1h),
        )


class Markers(StrEnum):
    """Where a Messages client puts its ``cache_control`` breakpoints (the other wires have
    none: their caches are automatic, so the layout changes nothing there)."""

    NONE = "none"
    """No breakpoint: nothing is ever read from the cache."""
    SYSTEM_NEWEST = "system-newest"
    """The system prompt and the newest message, as Claude Code does."""
    ALL_FOUR = "all-four"
    """Anthropic's four: the last tool, the system prompt's two blocks, the newest message."""


WIRES = {"chat": Wire.CHAT, "responses": Wire.RESPONSES, "anthropic": Wire.MESSAGES}
"""The ``--wire`` names."""
