"""The client side of the internal tool loop tests: one driver per client wire that builds a
request body, sends it through the official SDK (or as raw bytes with aiohttp) and reads back
what the client saw, in the same terms on every wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import anthropic
import openai

from skillstate.conversation import Message, ToolCall, ToolResult, Wire
from skillstate.protocols import adapter
from skillstate.support import jsonio
from skillstate.testing.recording import RecordedRequest

#: (client wire, upstream wire): each client against its own wire and against another one.
PAIRS = [
    ("openai-chat", "openai-chat"),
    ("openai-responses", "openai-responses"),
    ("anthropic-messages", "anthropic-messages"),
    ("openai-chat", "anthropic-messages"),
    ("openai-responses", "openai-chat"),
    ("anthropic-messages", "openai-responses"),
]
PAIR_IDS = [f"{client}<-{upstream}" for client, upstream in PAIRS]

LOOKUP = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


@dataclass(frozen=True, slots=True)
class Seen:
    """What a client got back: its text, its tool calls (id, name, arguments), the stop reason
    in canonical words, and the usage (input, output)."""

    text: str
    calls: list[tuple[str, str, Any]]
    stop: str | None
    usage: tuple[int, int]


@dataclass(frozen=True, slots=True)
class Step:
    """One earlier step of a conversation: the model called ``lookup`` with ``key`` and the
    client answered ``result``."""

    call_id: str
    key: str
    result: str


class Driver:
    """The requests and replies of one client wire."""

    wire: Wire
    path: str
    #: What the last event of a stream holds on this wire.
    terminal: bytes

    def body(self, task: str, steps: list[Step], *, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    async def call(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Seen:
        raise NotImplementedError

    async def raw(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> bytes:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url + self.path, json=body, headers=headers) as reply,
        ):
            raw = await reply.read()
            assert reply.status == 200, raw
            return raw

    async def chunks(
        self, url: str, body: dict[str, Any], headers: dict[str, str]
    ) -> AsyncIterator[bytes]:
        """The reply's bytes as they arrive."""
        async with (
            aiohttp.ClientSession() as session,
            session.post(url + self.path, json=body, headers=headers) as reply,
        ):
            assert reply.status == 200
            async for chunk in reply.content.iter_any():
                yield chunk


class ChatDriver(Driver):
    wire = Wire.CHAT
    path = "/v1/chat/completions"
    terminal = b"data: [DONE]"

    def body(self, task: str, steps: list[Step], *, stream: bool) -> dict[str, Any]:
        messages: list[Any] = [{"role": "user", "content": task}]
        for step in steps:
            function = {"name": "lookup", "arguments": json.dumps({"key": step.key})}
            call = {"id": step.call_id, "type": "function", "function": function}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": step.call_id, "content": step.result})
        function = {"name": "lookup", "description": "Look a key up", "parameters": LOOKUP}
        body: dict[str, Any] = {
            "model": "test-model",
            "messages": messages,
            "tools": [{"type": "function", "function": function}],
        }
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return body

    async def call(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Seen:
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0) as c:
            if body.get("stream"):
                kwargs = {k: v for k, v in body.items() if k != "stream"}
                async with c.chat.completions.stream(**kwargs, extra_headers=headers) as events:
                    async for _ in events:
                        pass
                    final = await events.get_final_completion()
            else:
                final = await c.chat.completions.create(**body, extra_headers=headers)
        choice = final.choices[0]
        calls = [
            (t.id, t.function.name, json.loads(t.function.arguments))
            for t in choice.message.tool_calls or []
            if t.type == "function"
        ]
        stops = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
        usage = final.usage
        assert usage is not None
        return Seen(
            choice.message.content or "",
            calls,
            stops.get(choice.finish_reason, choice.finish_reason),
            (usage.prompt_tokens, usage.completion_tokens),
        )


class ResponsesDriver(Driver):
    wire = Wire.RESPONSES
    path = "/v1/responses"
    terminal = b"event: response.completed"

    def body(self, task: str, steps: list[Step], *, stream: bool) -> dict[str, Any]:
        items: list[Any] = [{"role": "user", "content": task}]
        for step in steps:
            arguments = json.dumps({"key": step.key})
            items.append(
                {
                    "type": "function_call",
                    "call_id": step.call_id,
                    "name": "lookup",
                    "arguments": arguments,
                }
            )
            items.append(
                {"type": "function_call_output", "call_id": step.call_id, "output": step.result}
            )
        tool = {"type": "function", "name": "lookup", "parameters": LOOKUP, "strict": False}
        body: dict[str, Any] = {"model": "test-model", "input": items, "tools": [tool]}
        if stream:
            body["stream"] = True
        return body

    async def call(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Seen:
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0) as c:
            if body.get("stream"):
                kwargs = {k: v for k, v in body.items() if k != "stream"}
                async with c.responses.stream(**kwargs, extra_headers=headers) as events:
                    async for _ in events:
                        pass
                    final = await events.get_final_response()
            else:
                final = await c.responses.create(**body, extra_headers=headers)
        calls = [
            (item.call_id, item.name, json.loads(item.arguments))
            for item in final.output
            if item.type == "function_call"
        ]
        # This wire has no stop reason: a completed response that calls tools is a tool_use stop.
        stop = {"completed": "tool_use" if calls else "end_turn", "incomplete": "max_tokens"}
        usage = final.usage
        assert usage is not None
        return Seen(
            final.output_text,
            calls,
            stop.get(final.status or "", final.status),
            (usage.input_tokens, usage.output_tokens),
        )


class MessagesDriver(Driver):
    wire = Wire.MESSAGES
    path = "/v1/messages"
    terminal = b"event: message_stop"

    def body(self, task: str, steps: list[Step], *, stream: bool) -> dict[str, Any]:
        messages: list[Any] = [{"role": "user", "content": task}]
        for step in steps:
            use = {"type": "tool_use", "id": step.call_id, "name": "lookup"}
            messages.append({"role": "assistant", "content": [{**use, "input": {"key": step.key}}]})
            result = {"type": "tool_result", "tool_use_id": step.call_id, "content": step.result}
            messages.append({"role": "user", "content": [result]})
        tool = {"name": "lookup", "description": "Look a key up", "input_schema": LOOKUP}
        body: dict[str, Any] = {
            "model": "test-model",
            "max_tokens": 256,
            "messages": messages,
            "tools": [tool],
        }
        if stream:
            body["stream"] = True
        return body

    async def call(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Seen:
        async with anthropic.AsyncAnthropic(
            base_url=url, api_key="sk-ant-test", max_retries=0
        ) as c:
            if body.get("stream"):
                kwargs = {k: v for k, v in body.items() if k != "stream"}
                async with c.messages.stream(**kwargs, extra_headers=headers) as events:
                    async for _ in events:
                        pass
                    final = await events.get_final_message()
            else:
                final = await c.messages.create(**body, extra_headers=headers)
        text = "".join(block.text for block in final.content if block.type == "text")
        calls = [
            (block.id, block.name, block.input)
            for block in final.content
            if block.type == "tool_use"
        ]
        usage = final.usage
        return Seen(text, calls, final.stop_reason, (usage.input_tokens, usage.output_tokens))


DRIVERS: dict[str, Driver] = {
    "openai-chat": ChatDriver(),
    "openai-responses": ResponsesDriver(),
    "anthropic-messages": MessagesDriver(),
}


def upstream_messages(recorded: RecordedRequest) -> list[Message]:
    """What the upstream received, decoded to canonical messages (whatever its wire)."""
    assert recorded.wire is not None
    return adapter(recorded.wire).decode_request(jsonio.loads(recorded.body)).messages


def calls_and_results(
    recorded: RecordedRequest,
) -> tuple[list[ToolCall], dict[str, str]]:
    """Every tool call in what the upstream received, and each result's text by call id."""
    calls: list[ToolCall] = []
    results: dict[str, str] = {}
    for message in upstream_messages(recorded):
        for part in message.parts:
            if isinstance(part, ToolCall):
                calls.append(part)
            elif isinstance(part, ToolResult):
                results[part.call_id] = "".join(getattr(p, "text", "") for p in part.content)
    return calls, results
