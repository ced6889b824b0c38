"""Client loops of long sessions: agents that keep their whole transcript and send it each turn.

Each speaks one wire over plain aiohttp, the way its host does (the bodies are built by hand,
so what the gateway receives is exactly the host's shape):

* ``ResponsesAgent`` — Codex: ``input`` items (developer messages, ``function_call`` and
  ``function_call_output`` items, reasoning items sent back as received), streamed.
* ``MessagesAgent`` — Claude Code: system blocks with ``cache_control``, ``tool_use`` and
  ``tool_result`` blocks, one cache marker on the newest block (moved every request), a user
  instruction added to the pending ``tool_result`` message, ``role: "system"`` messages
  mid-conversation, streamed.
* ``ChatAgent`` — a custom loop on Chat Completions, not streamed.

``run_session`` plays a ``SessionPlan`` with one of them: the plan's instructions and system
notes go in before their turn, every call the model makes is run through the ``Dialect``.
"""

from __future__ import annotations

import copy
import hashlib
import io
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

from skillstate.conversation import Json
from skillstate.support import jsonio
from skillstate.testing.session_tools import Dialect
from skillstate.testing.session_view import Call
from skillstate.testing.sessions import SessionPlan, Workspace

EPHEMERAL: Json = {"type": "ephemeral"}


@dataclass(frozen=True, slots=True)
class TurnReply:
    """What the client got back in one turn: the model's text and its calls."""

    text: str
    calls: tuple[Call, ...]


class Agent(Protocol):
    """A client loop over one wire; ``body`` is what it sends on the next turn."""

    endpoint: Endpoint

    def body(self) -> Json: ...
    async def send(self) -> TurnReply: ...
    def add_results(self, results: list[tuple[str, str]]) -> None: ...
    def add_instruction(self, text: str) -> None: ...
    def add_system(self, text: str) -> None: ...


class GatewayRefused(AssertionError):
    """The gateway answered a turn with an error."""


@dataclass(slots=True)
class Endpoint:
    """Where an agent posts (``url`` may be changed between turns, to a restarted gateway),
    with which headers; ``session`` is the session the gateway said it resolved."""

    http: aiohttp.ClientSession
    url: str
    headers: Mapping[str, str]
    session: str | None = None

    async def post(self, body: Json) -> tuple[bytes, str]:
        # A file-like body: aiohttp sends it in chunks (and warns about large bytes bodies).
        data = io.BytesIO(jsonio.dumps(body))
        headers = {"content-type": "application/json", **self.headers}
        async with self.http.post(self.url, data=data, headers=headers) as reply:
            raw = await reply.read()
            if reply.status != 200:
                raise GatewayRefused(f"HTTP {reply.status}: {raw[:2000]!r}")
            self.session = reply.headers.get("x-skillstate-session", self.session)
            return raw, reply.headers.get("content-type", "")


def sse_data(raw: bytes) -> list[Json]:
    """The JSON ``data`` of each event of an SSE body (events without JSON data left out)."""
    events: list[Json] = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if lines and lines[0] != "[DONE]":
            value = jsonio.loads("\n".join(lines))
            if isinstance(value, dict):
                events.append(value)
    return events


class ResponsesAgent:
    """Codex's loop: ``template`` is the body without ``input`` (tools, ``include``,
    ``prompt_cache_key``...), ``head`` the items before the task (developer messages, the
    environment context)."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        base_url: str,
        template: Json,
        head: list[Json],
        task: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoint = Endpoint(http, base_url + "/v1/responses", dict(headers or {}))
        self.template = {k: v for k, v in template.items() if k != "input"}
        self.items: list[Json] = [*copy.deepcopy(head), _user_item(task)]

    def body(self) -> Json:
        return {**self.template, "input": self.items}

    async def send(self) -> TurnReply:
        raw, kind = await self.endpoint.post(self.body())
        if "text/event-stream" in kind:
            output = [
                e["item"] for e in sse_data(raw) if e.get("type") == "response.output_item.done"
            ]
        else:
            output = list(jsonio.loads(raw)["output"])
        self.items.extend(output)
        texts = [
            str(c.get("text", ""))
            for item in output
            if item.get("type") == "message"
            for c in item.get("content", [])
        ]
        calls = tuple(
            Call(str(i["call_id"]), str(i["name"]), str(i["arguments"]))
            for i in output
            if i.get("type") == "function_call"
        )
        return TurnReply("".join(texts), calls)

    def add_results(self, results: list[tuple[str, str]]) -> None:
        for call_id, output in results:
            self.items.append(
                {"type": "function_call_output", "call_id": call_id, "output": output}
            )

    def add_instruction(self, text: str) -> None:
        self.items.append(_user_item(text))

    def add_system(self, text: str) -> None:
        self.items.append(
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": text}],
            }
        )


def _user_item(text: str) -> Json:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


class MessagesAgent:
    """Claude Code's loop: ``template`` is the body without ``messages`` (system blocks, tools,
    ``metadata``, ``thinking``...); ``head`` the messages before the first answer, whose
    first user message gets ``task`` as its last text block."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        base_url: str,
        template: Json,
        head: list[Json],
        task: str,
        headers: Mapping[str, str] | None = None,
        *,
        mark_newest: bool = True,
    ) -> None:
        self.endpoint = Endpoint(http, base_url + "/v1/messages?beta=true", dict(headers or {}))
        self.template = {k: v for k, v in template.items() if k != "messages"}
        self.mark_newest = mark_newest
        self.messages: list[Json] = [_unmarked(m) for m in head]
        first = next(m for m in self.messages if m["role"] == "user")
        first["content"] = [*_blocks(first["content"]), {"type": "text", "text": task}]

    def body(self) -> Json:
        """The messages with one cache marker, on the newest message's last block (none
        unless ``mark_newest``)."""
        messages = list(self.messages)
        if not self.mark_newest:
            return {**self.template, "messages": messages}
        at = max(i for i, m in enumerate(messages) if m["role"] != "system")
        blocks = [dict(b) for b in _blocks(messages[at]["content"])]
        blocks[-1]["cache_control"] = dict(EPHEMERAL)
        messages[at] = {**messages[at], "content": blocks}
        return {**self.template, "messages": messages}

    async def send(self) -> TurnReply:
        raw, kind = await self.endpoint.post(self.body())
        if "text/event-stream" in kind:
            content = _accumulate(sse_data(raw))
        else:
            content = list(jsonio.loads(raw)["content"])
        self.messages.append({"role": "assistant", "content": content})
        text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
        calls = tuple(
            Call(str(b["id"]), str(b["name"]), jsonio.dumps_str(b.get("input", {})))
            for b in content
            if b.get("type") == "tool_use"
        )
        return TurnReply(text, calls)

    def add_results(self, results: list[tuple[str, str]]) -> None:
        blocks: list[Json] = [
            {"tool_use_id": cid, "type": "tool_result", "content": out, "is_error": False}
            for cid, out in results
        ]
        self.messages.append({"role": "user", "content": blocks})

    def add_instruction(self, text: str) -> None:
        last = self.messages[-1]
        if last["role"] == "user":
            last["content"] = [*_blocks(last["content"]), {"type": "text", "text": text}]
        else:
            self.messages.append({"role": "user", "content": [{"type": "text", "text": text}]})

    def add_system(self, text: str) -> None:
        self.messages.append({"role": "system", "content": text})


def _blocks(content: Any) -> list[Json]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _unmarked(message: Json) -> Json:
    out = copy.deepcopy(message)
    for block in out["content"] if isinstance(out["content"], list) else []:
        block.pop("cache_control", None)
    return out


def _accumulate(events: list[Json]) -> list[Json]:
    """The content blocks of an Anthropic stream."""
    blocks: dict[int, Json] = {}
    partial: dict[int, str] = {}
    for event in events:
        kind, index = event.get("type"), event.get("index", -1)
        if kind == "content_block_start":
            blocks[index] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[index]
            if delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
    for index, text in partial.items():
        blocks[index]["input"] = jsonio.loads(text) if text else {}
    return [blocks[i] for i in sorted(blocks)]


class ChatAgent:
    """A custom loop on Chat Completions (not streamed): system prompt, task, tool loop."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        base_url: str,
        template: Json,
        system: str,
        task: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.endpoint = Endpoint(http, base_url + "/v1/chat/completions", dict(headers or {}))
        self.template = {k: v for k, v in template.items() if k != "messages"}
        self.messages: list[Json] = [
            {"role": "system", "content": system},
            {"role": "user", "content": task},
        ]

    def body(self) -> Json:
        return {**self.template, "messages": self.messages}

    async def send(self) -> TurnReply:
        raw, _ = await self.endpoint.post(self.body())
        message = jsonio.loads(raw)["choices"][0]["message"]
        kept = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
        self.messages.append(kept)
        calls = tuple(
            Call(str(c["id"]), str(c["function"]["name"]), str(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        )
        return TurnReply(str(message.get("content") or ""), calls)

    def add_results(self, results: list[tuple[str, str]]) -> None:
        for call_id, output in results:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})

    def add_instruction(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def add_system(self, text: str) -> None:
        self.messages.append({"role": "system", "content": text})


@dataclass(slots=True)
class SessionLog:
    """What the client saw: one reply per turn, the size and a digest (BLAKE2b-128) of each
    body it sent, and the bodies of the turns it was asked to keep."""

    replies: list[TurnReply] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    digests: list[bytes] = field(default_factory=list)
    kept: dict[int, bytes] = field(default_factory=dict)


def body_digest(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=16).digest()


async def run_session(
    agent: Agent,
    plan: SessionPlan,
    dialect: Dialect,
    workspace: Workspace,
    *,
    turns: int | None = None,
    keep: Collection[int] = (),
    log: SessionLog | None = None,
    first_turn: int = 1,
    on_turn: Callable[[int], None] | None = None,
) -> SessionLog:
    """Play turns ``first_turn`` to ``turns`` (default: the plan's last) of ``plan``;
    ``on_turn(turn)`` is called just before each turn's request is sent."""
    log = SessionLog() if log is None else log
    for turn in range(first_turn, (turns or plan.turns) + 1):
        if turn in plan.system_notes:
            agent.add_system(plan.system_notes[turn])
        if turn in plan.instructions:
            agent.add_instruction(plan.instructions[turn])
        body = jsonio.dumps(agent.body())
        log.sizes.append(len(body))
        log.digests.append(body_digest(body))
        if turn in keep:
            log.kept[turn] = body
        if on_turn is not None:
            on_turn(turn)
        reply = await agent.send()
        log.replies.append(reply)
        if reply.calls:
            agent.add_results(
                [(c.id, dialect.run(workspace, c.name, c.arguments)) for c in reply.calls]
            )
        elif turn < (turns or plan.turns):
            agent.add_instruction("Continue.")
    return log
