"""The scripted upstream: a real aiohttp server on 127.0.0.1 that plays a model provider on all
three wires, answering each model request with what its ``Policy`` returns.

Routes (each with and without the ``/v1`` prefix; the query string is ignored):

* ``POST /v1/chat/completions`` — OpenAI Chat Completions, JSON or SSE by ``stream``
* ``POST /v1/responses`` — OpenAI Responses, JSON or SSE by ``stream``
* ``POST /v1/messages`` — Anthropic Messages, JSON or SSE by ``stream``
* ``POST /v1/messages/count_tokens`` — ``{"input_tokens": N}`` with the same estimate the
  usage of ``/v1/messages`` reports (no policy involved)
* ``GET /v1/models`` — the configured models, in Anthropic's list shape when the request has an
  ``anthropic-version`` header, else OpenAI's

With ``billing`` (a ``testing.billing.Billing``) the usage of every answer is counted with
o200k_base and a simulated prompt cache, and kept in ``billing.billed``; without it the usage
is the fake's byte estimate, or what the ``Reply`` says.

Every request is recorded (raw bytes included) before anything else happens, unknown routes
included; unknown routes get a 404 JSON error, a body that is not a JSON object a 400, both in
the route's wire shape. A policy that raises gets a 500 and its exception is kept in
``errors``. The server is run with handler cancellation, so a client that goes away mid-stream
is noticed at once, even while the stream is held or paced: ``cancelled`` counts such streams
(and ``Fault.HANG`` answers the client left) and ``disconnected`` is set.

Run by hand: ``python -m skillstate.testing.scripted --port 9999`` (see ``scripted``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Json, Usage, Wire
from skillstate.support import jsonio
from skillstate.testing import chat_bodies, messages_bodies, responses_bodies
from skillstate.testing.billing import Billing
from skillstate.testing.error_bodies import anthropic_error, openai_error
from skillstate.testing.faults import HUGE_BYTES, MALFORMED_EVENT, Fault
from skillstate.testing.outcome import CREATED, CREATED_ISO, Outcome, prompt_tokens, resolve
from skillstate.testing.policies import Policy, default_policy
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply
from skillstate.testing.token_view import TokenView, token_view


@dataclass(frozen=True, slots=True)
class Speaker:
    """How one wire answers: a finished body, or the SSE events of a stream."""

    body: Callable[[Outcome], Json]
    stream: Callable[[Outcome], Iterator[bytes]]


SPEAKERS = {  # also the tests' way to write a wire's reply for an outcome
    Wire.CHAT: Speaker(chat_bodies.completion, chat_bodies.stream),
    Wire.RESPONSES: Speaker(responses_bodies.response, responses_bodies.stream),
    Wire.MESSAGES: Speaker(messages_bodies.message, messages_bodies.stream),
}

#: (method, path without /v1) -> (wire, fields the provider requires)
_ROUTES: dict[tuple[str, str], tuple[Wire | None, tuple[str, ...]]] = {
    ("POST", "/chat/completions"): (Wire.CHAT, ("model", "messages")),
    ("POST", "/responses"): (Wire.RESPONSES, ("model",)),
    ("POST", "/messages"): (Wire.MESSAGES, ("model", "messages", "max_tokens")),
    ("POST", "/messages/count_tokens"): (Wire.MESSAGES, ("model", "messages")),
    ("GET", "/models"): (None, ()),
}

#: The largest request body the fake accepts, as Anthropic's API does.
MAX_BODY_BYTES = 32 * 1024 * 1024

_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


class ScriptedUpstream:
    """``async with ScriptedUpstream(policy) as up:`` serves on a free port of 127.0.0.1 (or
    ``port``); ``up.url`` is the base URL without ``/v1``. ``policy`` may be replaced between
    requests. ``billing``, when given, counts and bills usage as a provider would (see
    ``testing.billing``)."""

    def __init__(
        self,
        policy: Policy = default_policy,
        *,
        models: Sequence[str] = ("test-model",),
        port: int = 0,
        billing: Billing | None = None,
    ) -> None:
        self.policy = policy
        self.billing = billing
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self.answers: dict[int, bytearray] = {}
        """The body of each model answer sent with status 200, by the index of the request it
        answers (a stream's events joined, as far as they went): what a pass-through must
        relay byte for byte."""
        self.errors: list[Exception] = []
        self.cancelled = 0
        self.disconnected = asyncio.Event()
        self._port = port
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the scripted upstream is not started")
        return self._url

    async def start(self) -> None:
        # Providers take bodies of tens of MB (Anthropic: 32 MB); aiohttp's default is 1 MiB.
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A short shutdown timeout: a stream a test left held must not stall teardown.
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port)
        await site.start()
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self._url = f"http://{host}:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedUpstream:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        route = _ROUTES.get((request.method, _route_path(request.path)))
        recorded = await self._record(request, route[0] if route else None)
        if route is None:
            message = f"Invalid URL ({request.method} {request.path})"
            return _error(recorded, 404, "not_found_error", message)
        if recorded.method == "GET":
            return _json(self._models(recorded))
        body = recorded.json
        if not isinstance(body, dict):
            return _error(recorded, 400, "invalid_request_error", "the body is not a JSON object")
        missing = [name for name in route[1] if name not in body]
        if missing:
            return _error(recorded, 400, "invalid_request_error", f"{missing[0]}: Field required")
        view = None
        if self.billing is not None and recorded.wire is not None:
            # Encoding a long request takes a while; tiktoken lets other clients run meanwhile.
            view = await asyncio.to_thread(token_view, recorded.wire, body)
            refusal = self.billing.refusal(recorded.wire, view)
            if refusal is not None:
                return _error(recorded, 400, "invalid_request_error", refusal)
        if recorded.path.endswith("/count_tokens"):
            counted = len(view) if view is not None else prompt_tokens(Wire.MESSAGES, body)
            return _json({"input_tokens": counted})
        try:
            reply = self.policy(recorded)
        except Exception as exc:
            self.errors.append(exc)
            return _error(recorded, 500, "api_error", f"scripted upstream policy failed: {exc}")
        return await self._answer(request, recorded, reply, view)

    async def _record(self, request: web.Request, wire: Wire | None) -> RecordedRequest:
        raw = await request.read()
        try:
            parsed = jsonio.loads(raw) if raw else None
        except ValueError:
            parsed = None
        recorded = RecordedRequest(
            index=len(self.requests),
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=CIMultiDictProxy(CIMultiDict(request.headers)),
            body=raw,
            json=parsed,
            wire=wire,
        )
        self.requests.append(recorded)
        return recorded

    async def _answer(
        self,
        request: web.Request,
        recorded: RecordedRequest,
        reply: Reply,
        view: TokenView | None = None,
    ) -> web.StreamResponse:
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.fault is Fault.HANG:
            try:
                await asyncio.Event().wait()  # until the client leaves and the handler is cancelled
            except asyncio.CancelledError:
                self._client_left()
                raise
        if reply.fault is Fault.HUGE:
            reply = dataclasses.replace(reply, text="x" * HUGE_BYTES, fault=None)
        if reply.fault is Fault.RESET and not recorded.stream:
            _drop(request)
            return web.Response()
        error = reply.error
        if error is not None and not (error.mid_stream and recorded.stream):
            if reply.hold is not None:
                await reply.hold.wait()
            return _error(recorded, error.status, error.kind, error.message, reply.headers)
        outcome = resolve(reply, recorded)
        if self.billing is not None and view is not None:
            outcome = _billed(outcome, self.billing, recorded, view)
        speaker = SPEAKERS[outcome.wire]
        if recorded.stream:
            return await self._stream(request, recorded.index, speaker.stream(outcome), reply)
        if reply.hold is not None:
            await reply.hold.wait()
        if reply.fault is Fault.EMPTY:
            return web.Response(body=b"", content_type="application/json", headers=reply.headers)
        if reply.fault in (Fault.TRUNCATED_JSON, Fault.CUT_SHORT):
            raw = jsonio.dumps(speaker.body(outcome))
            cut = raw[: len(raw) // 2]
            return web.Response(body=cut, content_type="application/json", headers=reply.headers)
        answer = _json(speaker.body(outcome), headers=reply.headers)
        assert isinstance(answer.body, bytes)
        self.answers[recorded.index] = bytearray(answer.body)
        return answer

    async def _stream(
        self, request: web.Request, index: int, events: Iterator[bytes], reply: Reply
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={**_SSE_HEADERS, **reply.headers})
        sent = self.answers[index] = bytearray()
        if reply.fault is Fault.CUT_SHORT:  # half its bytes, most often in an event's middle
            whole = b"".join(events)
            events = iter((whole[: len(whole) // 2],))
        if reply.fault is Fault.EMPTY:
            events = iter(())
        if reply.fault is Fault.NO_FINISH:
            events = iter([event for event in events if not _finishes(event)])
        try:
            await response.prepare(request)
            for number, event in enumerate(events):
                if number and reply.chunk_delay:
                    await asyncio.sleep(reply.chunk_delay)
                await response.write(event)
                sent.extend(event)
                if number == reply.hold_after - 1 and reply.hold is not None:
                    await reply.hold.wait()
                if number == 0 and reply.fault is Fault.RESET:
                    await asyncio.sleep(0.05)  # what was sent reaches the client first
                    _drop(request)
                    return response
                if number == 0 and reply.fault is Fault.MALFORMED_SSE:
                    await response.write(MALFORMED_EVENT)
                    break
            await response.write_eof()
        except ConnectionResetError:
            self._client_left()
        except asyncio.CancelledError:
            self._client_left()
            raise
        return response

    def _client_left(self) -> None:
        self.cancelled += 1
        self.disconnected.set()

    def _models(self, recorded: RecordedRequest) -> Json:
        if "anthropic-version" in recorded.headers:
            listed: list[Json] = [
                {
                    "type": "model",
                    "id": name,
                    "display_name": name,
                    "created_at": CREATED_ISO,
                    "lifecycle": "active",
                }
                for name in self.models
            ]
            first = self.models[0] if self.models else None
            last = self.models[-1] if self.models else None
            return {"data": listed, "has_more": False, "first_id": first, "last_id": last}
        data = [
            {"id": name, "object": "model", "created": CREATED, "owned_by": "skillstate"}
            for name in self.models
        ]
        return {"object": "list", "data": data}


def _billed(
    outcome: Outcome, billing: Billing, recorded: RecordedRequest, view: TokenView
) -> Outcome:
    """``outcome`` with the usage ``billing`` charges for it."""
    charge = billing.charge(
        outcome.wire, outcome.body, output=outcome.usage.output, request=recorded.index, view=view
    )
    billed = charge.tokens
    usage = Usage(
        input=billed.input,
        output=billed.output,
        cached_input=billed.cached,
        cache_write=billed.cache_write,
        reasoning=outcome.usage.reasoning,
    )
    return dataclasses.replace(outcome, usage=usage, cache_write_1h=billed.cache_write_1h)


def _drop(request: web.Request) -> None:
    """Drop the connection without ending the response (a crashed or reset provider)."""
    transport = request.transport
    if transport is not None:
        transport.abort()


def _route_path(path: str) -> str:
    trimmed = path.rstrip("/") or "/"
    return trimmed[3:] if trimmed.startswith("/v1/") else trimmed


def _json(body: Json, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=jsonio.dumps(body), content_type="application/json", headers=headers
    )


def _error(
    recorded: RecordedRequest,
    status: int,
    kind: str,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """An error in the wire shape of the route (Anthropic's for Messages routes and for any
    request carrying ``anthropic-version``, OpenAI's otherwise)."""
    anthropic = recorded.wire is Wire.MESSAGES or (
        recorded.wire is None and "anthropic-version" in recorded.headers
    )
    if anthropic:
        return _json(anthropic_error(kind, message, str(recorded.index)), status, headers)
    return _json(openai_error(kind, message), status, headers)


FINISHING = (
    b'"finish_reason":"',
    b'"choices":[]',
    b"response.completed",
    b"message_delta",
    b"message_stop",
)
"""What marks an event of a stream's finish, on each wire (``Fault.NO_FINISH`` leaves those
out)."""


def _finishes(event: bytes) -> bool:
    return any(mark in event for mark in FINISHING)
