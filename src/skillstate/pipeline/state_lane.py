"""The state lane: the state engine as a lane of the request path (DESIGN.md, "State modes").

It hands the request to the engine, which loads Σ and the epoch and renders what goes
upstream, and gives the round loop what it needs to answer the model's calls to the internal
tools and check paper mode's envelope (``StateFollowup``). A request asking for several
alternative replies is left alone: the round loop continues one reply, and the others would be
lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillstate.conversation import Request, Response, ToolCall
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.surface import LaneSpec
from skillstate.protocols.portable import choices
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode
from skillstate.state.prepared import Prepared
from skillstate.state.rounds import Policy


@dataclass(slots=True)
class StateFollowup:
    engine: StateEngine
    prepared: Prepared

    @property
    def policy(self) -> Policy:
        config = self.engine.config
        paper = self.prepared.mode is Mode.PAPER
        return Policy(
            internal=frozenset(self.prepared.internal),
            max_rounds=config.max_internal_rounds,
            check=paper,
            retries=config.paper_retries if paper else 0,
            answer_action=paper,
        )

    @property
    def untouched(self) -> bool:
        prepared = self.prepared
        return (
            prepared.request is prepared.client
            and prepared.mode is Mode.HYBRID
            and not prepared.internal
            and prepared.handover is None
        )

    @property
    def handover(self) -> Request | None:
        return self.prepared.handover

    async def handed_over(self, response: Response | None) -> Request:
        return await self.engine.hand_over(self.prepared, response)

    async def answer(self, call: ToolCall) -> str:
        return await self.engine.answer(self.prepared, call)

    async def check(self, response: Response) -> str | None:
        return await self.engine.check_paper(self.prepared, response)

    async def finish(self, response: Response | None) -> None:
        await self.engine.finish(self.prepared, response)

    def verdict(self) -> str | None:
        rejected = self.prepared.rejected
        if rejected is None:
            return None
        return "rejected; reason=" + " ".join(rejected.split())[:300]


@dataclass(slots=True)
class StateLane:
    engine: StateEngine
    name: str = "state"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        if context.mode is Mode.OFF or choices(request) > 1:
            return LaneOutcome(request)
        prepared = await self.engine.prepare(
            context.session, request, context.mode, context.upstream_wire
        )
        if prepared is None:
            return LaneOutcome(request)
        report = prepared.report
        summary = f"{prepared.mode}:step{report.get('step', 0)}"
        if report.get("epoch"):
            summary += f":epoch{report['epoch']}"
        kept = range(0)
        if prepared.mode is Mode.HYBRID and prepared.epoch is not None:
            kept = prepared.epoch.kept()
        return LaneOutcome(
            prepared.request,
            report=report,
            summary=summary,
            followup=StateFollowup(self.engine, prepared),
            kept=kept,
        )


LANE = LaneSpec(
    name="state",
    build=lambda parts, options: StateLane(parts.engine),
    on=True,
    idle_off=True,
    idle_passing=True,
)
"""On by default: Σ and the archive in place of the turns they absorbed is what pays most
(docs/lanes.md); the mode (``x-skillstate-mode``) says how, per request."""
