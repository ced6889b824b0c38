"""Host compaction answered by the gateway itself (issue 3, item 10).

When a client asks to compact its history (``state.compaction`` says how each host asks) and
the session's Σ has content, the gateway writes the summary from Σ and a sweep of the
transcript and answers in the client's own wire, JSON or stream, without asking the upstream:
the model would only re-read a transcript the gateway has already distilled. With an empty Σ
the request goes upstream as any other.

The reply has the shape each host reads: Claude Code gets the summary inside ``<summary>``
tags, Codex's remote compaction one compaction item (``protocols.openai_responses
.compaction``), the others plain text.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid

from aiohttp import web

from skillstate import jsonio
from skillstate.conversation import (
    Delta,
    Event,
    Finish,
    Message,
    Opaque,
    Part,
    PartEnd,
    PartStart,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    Usage,
)
from skillstate.economics.tokenizer import count_tokens
from skillstate.exchange import Exchange
from skillstate.protocols import adapter
from skillstate.protocols.openai_responses.compaction import (
    compaction_id,
    summary_part,
    unwrap_summaries,
)
from skillstate.server.context import GatewayContext
from skillstate.server.sessions import SessionId
from skillstate.state.compaction import (
    Compaction,
    compact_summary,
    compaction_of,
    state_has_content,
    transcript,
)
from skillstate.state.engine import StateEngine

log = logging.getLogger("skillstate.compaction")

UPSTREAM = "skillstate"
"""The upstream name an answered compaction reports: the gateway itself."""


def unwrap(request: Request) -> tuple[Request, bytes] | None:
    """The request with the gateway's own compaction items turned back into summaries, and
    its body re-encoded for forwarding; None when it holds none (the original bytes go)."""
    unwrapped = unwrap_summaries(request)
    if unwrapped is None:
        return None
    return unwrapped, jsonio.dumps(adapter(request.source).encode_request(unwrapped))


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


async def answer_compaction(
    http: web.Request,
    gateway: GatewayContext,
    engine: StateEngine,
    client: Request,
    session: SessionId,
    headers: dict[str, str],
) -> web.StreamResponse | None:
    """The gateway's own answer to a compaction request, or None to let it go upstream (not a
    compaction request, or nothing in Σ to answer from)."""
    kind = compaction_of(client)
    if kind is None:
        return None
    started = time.perf_counter()
    summary = await summary_for(engine, session.id, client, kind)
    if summary is None:
        log.info("session %s: %s compaction goes upstream: the state is empty", session.id, kind)
        return None
    response = compaction_response(client, kind, summary)
    ours = {**headers, "x-skillstate-compaction": kind.value}
    if client.params.stream:
        out = await _stream(http, client, response, ours)
    else:
        body = jsonio.dumps(adapter(client.source).encode_response(response, client))
        out = web.Response(status=200, body=body, headers=ours, content_type="application/json")
    log.info("session %s: %s compaction answered from the state", session.id, kind)
    notify(gateway, _exchange(session, client, response, started))
    return out


def compaction_response(client: Request, kind: Compaction, summary: str) -> Response:
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
        created=int(time.time()),
    )


def events(response: Response) -> list[Event]:
    """``response`` as the canonical stream a provider would have sent."""
    out: list[Event] = [Start(response.id, response.model, created=response.created)]
    for index, part in enumerate(response.message.parts):
        if isinstance(part, Text):
            out += [PartStart(index, dataclasses.replace(part, text="")), Delta(index, part.text)]
        elif isinstance(part, Opaque):
            out.append(PartStart(index, part))
        out.append(PartEnd(index))
    out.append(Finish(response.stop_reason, response.usage))
    return out


async def _stream(
    http: web.Request, client: Request, response: Response, headers: dict[str, str]
) -> web.StreamResponse:
    encoder = adapter(client.source).stream_encoder(client)
    data = b"".join(encoder.encode(event) for event in events(response)) + encoder.close()
    out = web.StreamResponse(status=200, headers=headers)
    out.content_type = "text/event-stream"
    out.headers["cache-control"] = "no-cache"
    await out.prepare(http)
    await out.write(data)
    await out.write_eof()
    return out


def _exchange(session: SessionId, client: Request, response: Response, started: float) -> Exchange:
    return Exchange(
        session=session.id,
        session_source=session.source,
        client_wire=client.source,
        upstream_wire=client.source,
        upstream=UPSTREAM,
        request=client,
        response=response,
        status=200,
        streamed=client.params.stream,
        forwarded_original=False,
        elapsed_s=time.perf_counter() - started,
        started=started,
        note="compaction answered from the session state",
    )


def notify(gateway: GatewayContext, exchange: Exchange) -> None:
    """Observers see an answered compaction like any exchange; one that fails is skipped."""
    for observer in gateway.observers:
        try:
            observer(exchange)
        except Exception:
            log.exception("observer %r failed", observer)
