"""The host compaction lane (issue 3, item 10): a client's request to compact its history,
answered by the gateway from Σ and a sweep of the transcript, without asking the upstream.

``state.compaction`` says how each host asks. When the session's Σ has content, the lane
answers with the summary in the shape each host reads: Claude Code gets it inside
``<summary>`` tags, Codex's remote compaction one compaction item
(``protocols.openai_responses.compaction``), the others plain text. With an empty Σ the request
goes upstream as any other. Either way, the gateway's own compaction items in a request's
history are turned back into the summaries they hold before anything else reads it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from skillstate.conversation import (
    Message,
    Part,
    Request,
    Response,
    StopReason,
    Text,
    Usage,
    Wire,
)
from skillstate.economics.tokenizer import count_tokens
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.surface import LaneSpec
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.compaction import (
    compaction_id,
    summary_part,
    unwrap_summaries,
)
from skillstate.state.compaction import (
    Compaction,
    compact_summary,
    compaction_of,
    state_has_content,
    transcript,
)
from skillstate.state.engine import StateEngine
from skillstate.state.mode import Mode

log = logging.getLogger("skillstate.compaction")


async def summary_for(
    engine: StateEngine, session: str, client: Request, kind: Compaction | None
) -> str | None:
    """The summary that answers ``client``'s compaction (``kind`` None: the whole request is
    the transcript), or None when the session's Σ is empty."""
    record = await engine.store.load(session)
    if not state_has_content(record.state):
        return None
    messages = client.messages if kind is None else transcript(client, kind)
    return compact_summary(record.state, messages, engine.config.schema)


def compaction_response(client: Request, kind: Compaction, summary: str, now: int) -> Response:
    """The canonical reply: one part in the shape the host reads. Usage: nothing went
    upstream, so no input; the output is the summary's tokens."""
    wire = client.source
    token = uuid.uuid4().hex
    part: Part
    if kind is Compaction.CODEX_REMOTE:
        part = summary_part(summary, compaction_id(token))
    elif kind is Compaction.CLAUDE_CODE:
        part = Text(f"<summary>\n{summary}\n</summary>")
    else:
        part = Text(summary)
    return Response(
        id=adapter(wire).response_id(token),
        model=client.model,
        message=Message("assistant", [part]),
        source=wire,
        stop_reason=StopReason.END,
        usage=Usage(output=count_tokens(summary)),
        created=now,
    )


@dataclass(slots=True)
class CompactionLane:
    engine: StateEngine
    clock: Callable[[], float]
    name: str = "compaction"

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        if context.mode is Mode.OFF:
            return LaneOutcome(request)
        if context.client_wire is Wire.RESPONSES:  # the one wire whose items they are
            request = unwrap_summaries(request) or request
        kind = compaction_of(request)
        if kind is None:
            return LaneOutcome(request)
        summary = await summary_for(self.engine, context.session, request, kind)
        if summary is None:
            log.info("session %s: %s compaction goes upstream: Σ is empty", context.session, kind)
            return LaneOutcome(request, summary=f"{kind.value}:upstream")
        log.info("session %s: %s compaction answered from Σ", context.session, kind)
        answer = compaction_response(request, kind, summary, int(self.clock()))
        return LaneOutcome(
            request, report={"compaction": kind.value}, summary=kind.value, answer=answer
        )


LANE = LaneSpec(
    name="compaction",
    build=lambda parts, options: CompactionLane(parts.engine, parts.clock),
    on=True,
    idle_off=True,
    idle_passing=True,  # it acts on a host's compaction only
)
"""On by default: it answers only a host's own request to compact its history, from Σ."""
