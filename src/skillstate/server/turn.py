"""Serving a client request that is not a byte pass-through: the round loop over ``forward``.

Translated requests and requests a lane rewrote go here, JSON and streams alike. The decisions
are ``state.rounds``'s; this module performs its steps: it posts each round through
``Forward``, reads the reply (a JSON body whole, a stream event by event into the client's
stream), answers internal calls and paper envelopes through the lane's ``Followup``, commits
the state before the client has the whole reply (so its next request sees it), and tells the
client about a failure in the right way: the upstream's own status before the first byte, the
client wire's error event after it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

from skillstate.conversation import (
    Accumulator,
    ErrorKind,
    Event,
    Json,
    Profile,
    ProtocolError,
    Request,
    Response,
    Start,
    ToolCall,
    Usage,
    Wire,
    events_of,
)
from skillstate.economics import tokenizer
from skillstate.economics.metered import Metered, counted, meter
from skillstate.pipeline.lane import Followup
from skillstate.protocols import adapter
from skillstate.protocols.portable import namespace_map, portable_request, restore_namespace
from skillstate.protocols.profiles import fit
from skillstate.server.client_stream import ClientGone, ClientStream
from skillstate.server.errors import error_response, failure_response
from skillstate.server.forward import Forward
from skillstate.server.outbound import Outbound
from skillstate.server.replies import Reply, UpstreamFailure
from skillstate.state.handover import HANDOVER_ROUND
from skillstate.state.rounds import Answer, Check, Done, Policy, Rounds, Send, Step
from skillstate.support import jsonio

log = logging.getLogger("skillstate.turn")


def upstream_body(request: Request, target: Wire, profile: Profile) -> tuple[bytes, list[str]]:
    """``request`` encoded for an upstream of ``target`` and ``profile``, and the tools it had
    to leave out."""
    encoded, dropped = _encoded(request, target, profile)
    return jsonio.dumps(encoded), dropped


def _encoded(request: Request, target: Wire, profile: Profile) -> tuple[Json, list[str]]:
    portable, dropped = portable_request(request, target)
    wire = adapter(target)
    return fit(wire.encode_request(wire.for_upstream(portable)), profile, target), dropped


@dataclasses.dataclass(slots=True)
class Turn:
    """One client request's rounds."""

    forward: Forward
    client: Request
    headers: dict[str, str]
    followup: Followup | None = None
    query: str = ""
    remember: Callable[[Response], Awaitable[None]] | None = None
    """Keeps the reply for a later ``previous_response_id`` (``server.history``). Such a reply
    goes to the client under an id the gateway makes (``Turn.named``), not the upstream's:
    an upstream of another wire may give one id twice (Ollama's Chat ids are ``chatcmpl-``
    and one of 999 numbers), and a kept reply's id must name one conversation only."""
    after_handover: Callable[[Request], Awaitable[Request]] | None = None
    """What the lanes after the state lane make of the request a handover round leads to
    (they saw the request before it; the handover builds the turn's request anew)."""
    big: bool = False
    """The client's body was megabytes long: the upstream body is written in steps, so that
    a long string in it does not hold every other client (``jsonio.dumps_cooperatively``)."""
    named: str = ""
    """The id the reply goes to the client under where the gateway keeps it (``remember``);
    empty: the upstream's own."""

    async def serve(self, outbound: Request) -> web.StreamResponse:
        policy = self.followup.policy if self.followup is not None else Policy()
        before: list[tuple[Metered, str]] = []
        if self.followup is not None and self.followup.handover is not None:
            outbound, before = await self._hand_over(self.followup, self.followup.handover)
        rounds = Rounds(outbound, policy, before)
        self.forward.track(rounds.metered, rounds.causes, rounds.tools)
        if self.remember is not None:
            self.named = adapter(self.client.source).response_id(secrets.token_hex(24))
        try:
            if self.client.params.stream:
                return await self._stream(rounds)
            return await self._json(rounds)
        except ProtocolError as exc:
            self.forward.failed(exc.status, exc.message)
            return error_response(self.client.source, exc.status, exc.message, headers=self.headers)

    async def _hand_over(
        self, followup: Followup, request: Request
    ) -> tuple[Request, list[tuple[Metered, str]]]:
        """The handover round (``state.handover``), hidden from the client: the request to
        send next, and the round's usage. A failed round is logged and left behind: the
        boundary goes on without it."""
        outbound = dataclasses.replace(await self._outbound(request), optional=True)
        try:
            async with self.forward.send(outbound) as reply:
                response: Response | None = await _whole(reply)
        except UpstreamFailure as failure:
            log.info("the handover round failed (%d %s); going on", failure.status, failure.kind)
            response = None
        # Shielded: a client that leaves now must not leave Σ patched and the epoch not.
        sent = await asyncio.shield(followup.handed_over(response))
        if self.after_handover is not None:
            sent = await self.after_handover(sent)
        self.forward.handed_over(sent)  # what the client's own round brings, not the hidden one's
        if response is None:
            return sent, []
        return sent, [(meter(response.usage, request, response.message), HANDOVER_ROUND)]

    async def _outbound(self, request: Request) -> Outbound:
        forward = self.forward
        encoded, dropped = _encoded(request, forward.wire, forward.upstream.profile)
        body = await jsonio.dumps_cooperatively(encoded) if self.big else jsonio.dumps(encoded)
        if dropped and "x-skillstate-dropped-tools" not in self.headers:
            self.headers["x-skillstate-dropped-tools"] = ",".join(dropped)

        def render(wire: Wire, profile: Profile) -> tuple[str, bytes]:  # for a fallback
            return adapter(wire).path, upstream_body(request, wire, profile)[0]

        return Outbound(adapter(self.forward.wire).path, body, self.query, render=render)

    async def _step(self, step: Step, rounds: Rounds) -> Step:
        """Perform an ``Answer`` or ``Check`` step; the machine's next step."""
        followup = self.followup
        if followup is None:
            raise RuntimeError(f"{type(step).__name__} without a lane to perform it")
        if isinstance(step, Answer):
            answers = [(call, await followup.answer(call)) for call in step.calls]
            return rounds.answered(answers)
        assert isinstance(step, Check)
        return rounds.checked(await followup.check(step.response))

    async def _finish(self, response: Response) -> None:
        """Commit what the reply means before the client has all of it, so its next request
        sees it. Shielded: a client that goes away meanwhile does not cancel the work."""
        if self.followup is not None:
            await asyncio.shield(self.followup.finish(response))
        if self.remember is not None:
            await asyncio.shield(self.remember(response))

    async def _shown_usage(self, response: Response, rounds: Rounds) -> Usage | None:
        """The usage the client is shown: the reply's; where that is unknown (a round's
        provider reported none) and the client's wire requires one
        (``Adapter.usage_required``), the gateway's own count of every round, an estimate as
        the ledger records it; else none, which the encoder leaves out."""
        if response.usage is not None or not adapter(self.client.source).usage_required:
            return response.usage
        metered = list(rounds.metered)
        # Counting a long history takes milliseconds: off the event loop, as the ledger does.
        counts = await asyncio.to_thread(lambda: [counted(m)[0] for m in metered])
        return sum(counts, Usage())

    # --- JSON -----------------------------------------------------------------------------

    async def _json(self, rounds: Rounds) -> web.StreamResponse:
        step: Step = rounds.first()
        try:
            while not isinstance(step, Done):
                if isinstance(step, Send):
                    step = rounds.replied(await self._whole_round(step.request))
                else:
                    step = await self._step(step, rounds)
        except UpstreamFailure as failure:
            self.forward.failed(failure.status, failure.message)
            return failure_response(self.client.source, failure, self.headers)
        response = self._named(restore_namespaces(step.response, self.client))
        await self._finish(response)
        verdict = self.followup.verdict() if self.followup is not None else None
        if verdict is not None:
            self.headers["x-skillstate-state"] = _header_safe(verdict)
        shown = dataclasses.replace(response, usage=await self._shown_usage(response, rounds))
        encoded = adapter(self.client.source).encode_response(shown, self.client)
        self.headers.update(self.forward.relayed)
        self.forward.answered(200, response, verdict, rounds=len(rounds.causes))
        body = jsonio.dumps(encoded)
        return web.Response(
            status=200, body=body, headers=self.headers, content_type="application/json"
        )

    async def _whole_round(self, request: Request) -> Response:
        """One JSON round, read whole inside ``Forward``'s tries: nothing of it reached the
        client yet, so a reply cut short or unreadable is tried again like a 502."""
        got: list[Response] = []

        async def settle(reply: Reply) -> None:
            got.append(await _whole(reply))

        outbound = dataclasses.replace(await self._outbound(request), settle=settle)
        async with self.forward.send(outbound):
            return got[-1]

    # --- streams --------------------------------------------------------------------------

    async def _stream(self, rounds: Rounds) -> web.StreamResponse:
        stream = ClientStream(self.forward.http, self.client.source, self.client, self.headers)
        try:
            return await self._stream_rounds(stream, rounds)
        except UpstreamFailure as failure:
            self.forward.failed(failure.status, failure.message)
            if not stream.opened:
                return failure_response(self.client.source, failure, self.headers)
            return await stream.fail(failure.status, failure.kind, failure.message)
        except ClientGone:
            raise  # nobody left to tell: the error middleware notes it
        except Exception:
            if not stream.opened:
                raise  # the error middleware answers with a 500 in the client's wire
            # Bytes are out: the stream must end in the wire's own way, never half-written.
            log.exception("the gateway failed mid-stream")
            self.forward.failed(500, "internal gateway error mid-stream")
            message = "internal gateway error; see its log"
            return await stream.fail(500, ErrorKind.UPSTREAM, message)

    async def _stream_rounds(self, stream: ClientStream, rounds: Rounds) -> web.StreamResponse:
        step: Step = rounds.first()
        while not isinstance(step, Done):
            if isinstance(step, Send):
                outbound = await self._outbound(step.request)
                await self._stream_round(stream, rounds, outbound, step.request)
                step = rounds.ended()
            else:
                step = await self._step(step, rounds)
        response = self._named(step.response)
        await self._finish(response)
        closing = rounds.closing(await self._shown_usage(response, rounds))
        await stream.send(self._named_start(closing))  # its opening, where it was held
        # A stream's headers are long gone: the verdict reaches the ledger only.
        verdict = self.followup.verdict() if self.followup is not None else None
        self.forward.answered(200, response, verdict, rounds=len(rounds.causes))
        return await stream.end()

    async def _stream_round(
        self, stream: ClientStream, rounds: Rounds, outbound: Outbound, sent: Request
    ) -> None:
        async with self.forward.send(outbound) as reply:
            if not stream.opened:
                self.headers.update(reply.headers)
            rounds.begin(reply.wire)
            try:
                if not reply.streamed:  # an upstream that answered a stream request in JSON
                    shown = _viewed(rounds, events_of(await reply.response()))
                    await stream.send(self._named_start(shown))
                    return
                async for batch in reply.events():
                    shown = _viewed(rounds, batch)  # the rounds see the upstream's own events
                    if not stream.opened:
                        shown = await self._counted_start(shown, sent)
                    await stream.send(self._named_start(shown))
            except (ClientGone, asyncio.CancelledError):
                rounds.left()  # what the upstream made of it so far is spent
                raise

    def _named(self, response: Response) -> Response:
        """``response`` under the id the gateway gave it, where it gave one (``named``)."""
        return dataclasses.replace(response, id=self.named) if self.named else response

    def _named_start(self, batch: list[Event]) -> list[Event]:
        """The stream's opening under the id the gateway gave the reply (``named``)."""
        if not self.named:
            return batch
        return [
            dataclasses.replace(event, id=self.named) if isinstance(event, Start) else event
            for event in batch
        ]

    async def _counted_start(self, batch: list[Event], sent: Request) -> list[Event]:
        """The stream's opening with a usage where the client's wire requires one there
        (``Adapter.usage_required``) and the upstream's opening had none: the gateway's own
        count of the prompt sent (provisional, as the provider's own is; the final counts come
        with the finish), never zeros the provider did not send."""
        if not adapter(self.client.source).usage_required:
            return batch
        out = []
        for event in batch:
            if isinstance(event, Start) and event.usage is None:
                prompt = await asyncio.to_thread(tokenizer.count_request, sent)
                event = dataclasses.replace(event, usage=Usage(input=prompt))
            out.append(event)
        return out


def _header_safe(text: str) -> str:
    """``text`` as a header value: printable ASCII on one line."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def _viewed(rounds: Rounds, events: list[Event]) -> list[Event]:
    return [shown for event in events for shown in rounds.view(event)]


async def _whole(reply: Reply) -> Response:
    """The reply whole, also when the upstream streamed a reply to a JSON request."""
    if not reply.streamed:
        return await reply.response()
    accumulator = Accumulator(reply.wire)
    async for batch in reply.events():
        for event in batch:
            accumulator.add(event)
    return accumulator.response()


def restore_namespaces(response: Response, client: Request) -> Response:
    names = namespace_map(client)
    if names:
        parts = response.message.parts
        response.message.parts = [
            restore_namespace(p, names) if isinstance(p, ToolCall) else p for p in parts
        ]
    return response


async def answer_locally(
    http: web.Request, client: Request, response: Response, headers: dict[str, str]
) -> web.StreamResponse:
    """A reply a lane made itself (nothing went upstream), in the client's wire."""
    if client.params.stream:
        stream = ClientStream(http, client.source, client, headers)
        await stream.send(events_of(response))
        return await stream.end()
    body = jsonio.dumps(adapter(client.source).encode_response(response, client))
    return web.Response(status=200, body=body, headers=headers, content_type="application/json")
