"""Chat streams: decoding real-shaped chunk streams, encoding events, and the stream law."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from skillstate.conversation import (
    Accumulator,
    Delta,
    ErrorKind,
    Event,
    Failure,
    Finish,
    PartEnd,
    PartStart,
    Reasoning,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    Tool,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_chat import decode_request, stream_decoder, stream_encoder
from skillstate.protocols.sse import SSEDecoder, SSEEvent
from skillstate.protocols.streams import StreamObserver
from skillstate.support.jsonio import dumps, loads

HEAD = {
    "id": "chatcmpl-C1",
    "object": "chat.completion.chunk",
    "created": 1764000000,
    "model": "gpt-4.1-mini",
    "service_tier": "default",
    "system_fingerprint": "fp_6f2eabb9a5",
}


def chunk(delta: dict[str, Any] | None, finish: str | None = None, **more: Any) -> bytes:
    """One chunk as OpenAI sends it with ``include_usage`` (``usage: null`` until the end)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None}]
    if delta is not None:
        choices[0]["finish_reason"] = finish
    body = {**HEAD, "choices": choices, "usage": None, "obfuscation": "Xy1", **more}
    return b"data: " + dumps(body) + b"\n\n"


DONE = b"data: [DONE]\n\n"
USAGE = {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}
TEXT_STREAM = b"".join(
    [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "Hello"}),
        chunk({"content": " there"}),
        chunk({}, "stop"),
        chunk(None, usage=USAGE),
        DONE,
    ]
)
TOOL_STREAM = b"".join(
    [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "read", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"b"}'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a"}'}}]}),
        chunk({}, "tool_calls"),
        chunk(None, usage=USAGE),
        DONE,
    ]
)


def sse(raw: bytes, step: int = 0) -> list[SSEEvent]:
    decoder = SSEDecoder()
    if not step:
        return decoder.feed(raw) + decoder.close()
    events: list[SSEEvent] = []
    for start in range(0, len(raw), step):
        events.extend(decoder.feed(raw[start : start + step]))
    return events + decoder.close()


def decode(raw: bytes, step: int = 0) -> list[Event]:
    decoder = stream_decoder()
    events: list[Event] = []
    for event in sse(raw, step):
        events.extend(decoder.feed(event))
    return events + decoder.close()


def accumulate(events: list[Event]) -> Response:
    acc = Accumulator(Wire.CHAT)
    for event in events:
        acc.add(event)
    return acc.response()


def encode(events: list[Event], request: Request | None = None) -> bytes:
    encoder = stream_encoder(request)
    return b"".join(encoder.encode(event) for event in events) + encoder.close()


def test_text_stream_events() -> None:
    extra = {"service_tier": "default", "system_fingerprint": "fp_6f2eabb9a5"}
    assert decode(TEXT_STREAM, step=7) == [
        Start("chatcmpl-C1", "gpt-4.1-mini", Wire.CHAT, created=1764000000, extra=extra),
        PartStart(0, Text("")),
        Delta(0, "Hello"),
        Delta(0, " there"),
        PartEnd(0),
        Finish(StopReason.END, Usage(input=19, output=10), {"finish_reason": "stop"}),
    ]


def test_parallel_tool_calls_interleave() -> None:
    events = decode(TOOL_STREAM)
    starts = [e for e in events if isinstance(e, PartStart)]
    assert starts == [
        PartStart(0, ToolCall("call_a", "read", "")),
        PartStart(1, ToolCall("call_b", "read", "")),
    ]
    assert events[-3:] == [
        PartEnd(0),
        PartEnd(1),
        Finish(StopReason.TOOL_CALLS, Usage(input=19, output=10), {"finish_reason": "tool_calls"}),
    ]
    calls = accumulate(events).message.parts
    assert [c.arguments for c in calls if isinstance(c, ToolCall)] == [
        '{"path":"a"}',
        '{"path":"b"}',
    ]


def test_reasoning_then_text() -> None:
    raw = b"".join(
        [
            chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
            chunk({"content": None, "reasoning_content": "Two plus"}),
            chunk({"content": None, "reasoning_content": " two."}),
            chunk({"content": "4", "reasoning_content": None}),
            chunk({}, "stop"),
            DONE,
        ]
    )
    events = decode(raw)
    assert events[1:7] == [
        PartStart(0, Reasoning(hints={"key": "reasoning_content"})),
        Delta(0, "Two plus"),
        Delta(0, " two."),
        PartEnd(0),
        PartStart(1, Text("")),
        Delta(1, "4"),
    ]
    resp = accumulate(events)
    assert resp.message.parts == [
        Reasoning("Two plus two.", hints={"key": "reasoning_content"}),
        Text("4"),
    ]
    assert resp.usage is None  # the stream sent none: unknown, not zeros


def test_a_stream_with_its_finish_reason_but_no_done_finishes() -> None:
    raw = chunk({"role": "assistant", "content": "par"}) + chunk({}, "length")
    events = decode(raw)
    assert events[-2:] == [PartEnd(0), Finish(StopReason.LENGTH, None, {"finish_reason": "length"})]
    assert decode(b"") == []


def test_a_stream_cut_before_its_finish_reason_fails() -> None:
    """Never a cut answer passed on as complete (issue 7, defect 4)."""
    cut = decode(chunk({"role": "assistant", "content": "par"}))
    assert not any(isinstance(e, Finish) for e in cut)
    assert cut[-1] == Failure("the upstream stream ended early", ErrorKind.UPSTREAM, 502)


def test_an_error_event_fails_the_stream() -> None:
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}
    raw = chunk({"role": "assistant", "content": "a"}) + b"data: " + dumps(error) + b"\n\n"
    events = decode(raw + chunk({"content": "late"}) + DONE)
    assert events[-1] == Failure("Rate limit reached", ErrorKind.RATE_LIMIT, 429)
    assert not any(isinstance(e, Finish) for e in events)
    assert decode(b'data: {"error": "boom"}\n\n') == [Failure("boom", ErrorKind.UPSTREAM, 500)]
    server = {"error": {"message": "", "type": "invalid_request_error"}}
    assert decode(b"data: " + dumps(server) + b"\n\n") == [
        Failure("upstream error during streaming", ErrorKind.INVALID_REQUEST, 400)
    ]


def test_junk_and_other_choices_are_ignored() -> None:
    other = {**HEAD, "choices": [{"index": 1, "delta": {"content": "other sample"}}]}
    raw = b"".join(
        [
            b"data: keep-alive\n\n",
            b"data: [1, 2]\n\n",
            chunk({"role": "assistant", "content": "mine"}),
            b"data: " + dumps(other) + b"\n\n",
            chunk({}, "stop"),
            DONE,
        ]
    )
    assert accumulate(decode(raw)).message.parts == [Text("mine")]


def test_refusal_and_custom_calls() -> None:
    raw = b"".join(
        [
            chunk({"role": "assistant", "refusal": "I can't"}),
            chunk({"refusal": " help."}),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "type": "custom", "custom": {"name": "patch"}}
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "custom": {"input": "*** Begin"}}]}),
            chunk({}, "tool_calls"),
            DONE,
        ]
    )
    resp = accumulate(decode(raw))
    assert resp.message.parts == [
        Text("I can't help.", hints={"refusal": True}),
        ToolCall("c1", "patch", "*** Begin", kind="custom"),
    ]
    again = accumulate(decode(encode(decode(raw))))
    assert again.message.parts == resp.message.parts


def data_of(raw: bytes) -> list[Any]:
    return [e.data if e.data == "[DONE]" else loads(e.data) for e in sse(raw)]


def test_encoder_chunks_validate_and_follow_openai_order() -> None:
    events = decode(TOOL_STREAM)
    items = data_of(encode(events))
    assert items[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(item) for item in items[:-1]]
    assert chunks[0].choices[0].delta.role == "assistant"
    opening = [c.choices[0].delta.tool_calls for c in chunks if c.choices][1]
    assert opening is not None and opening[0].id == "call_a" and opening[0].type == "function"
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == 19
    assert all(c.system_fingerprint == "fp_6f2eabb9a5" for c in chunks)


def test_usage_chunk_only_when_the_client_asked() -> None:
    events = decode(TEXT_STREAM)
    plain = decode_request({"model": "m", "messages": [], "stream": True})
    asked = decode_request(
        {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    )
    without = data_of(encode(events, plain))
    assert all(item == "[DONE]" or item["choices"] for item in without)
    assert data_of(encode(events, asked))[-2]["usage"]["total_tokens"] == 29
    assert data_of(encode(events, None))[-2]["usage"]["total_tokens"] == 29


def test_with_include_usage_every_other_chunk_says_usage_null() -> None:
    """As the OpenAI API sends it: ``"usage": null`` on each chunk, then the usage chunk with
    empty choices; without ``include_usage`` no chunk has the key."""
    events = decode(TOOL_STREAM)
    asked = decode_request(
        {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    )
    for request in (asked, None):
        *chunks, last, done = data_of(encode(events, request))
        assert done == "[DONE]"
        assert chunks and all(c["choices"] and c["usage"] is None for c in chunks)
        assert "usage" in chunks[0] and last["choices"] == [] and last["usage"]["total_tokens"]
    plain = decode_request({"model": "m", "messages": [], "stream": True})
    assert not any("usage" in c for c in data_of(encode(events, plain))[:-1])


def test_usage_from_the_start_of_another_wire() -> None:
    events: list[Event] = [
        Start("msg_1", "claude", Wire.MESSAGES, usage=Usage(input=50, cached_input=40)),
        Finish(StopReason.END, Usage(output=7)),
    ]
    usage = data_of(encode(events))[-2]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (50, 7)
    assert usage["prompt_tokens_details"]["cached_tokens"] == 40


def test_failure_becomes_an_error_event() -> None:
    events: list[Event] = [
        Start("r", "m"),
        PartStart(0, Text("")),
        Delta(0, "par"),
        Failure("upstream overloaded", ErrorKind.OVERLOADED, 529),
        Delta(0, "tial"),
    ]
    items = data_of(encode(events))
    assert items[-2:] == [
        {
            "error": {
                "message": "upstream overloaded",
                "type": "server_error",
                "param": None,
                "code": "server_is_overloaded",
            }
        },
        "[DONE]",
    ]
    assert decode(encode(events))[-1] == Failure("upstream overloaded", ErrorKind.OVERLOADED, 503)


def test_events_of_another_wire() -> None:
    """Reasoning of another wire is not sent; a custom tool another wire called as a function
    is sent whole, in the custom shape, when its part ends."""
    request = Request("m", [], Wire.CHAT, tools=[Tool("apply_patch", kind="custom")])
    events: list[Event] = [
        Start("msg_1", "claude", Wire.MESSAGES, extra={"type": "message"}),
        PartStart(0, Reasoning("", hints={"key": "reasoning_content"})),
        Delta(0, "thinking", signature="sig"),
        PartEnd(0),
        PartStart(1, Text("On it.")),
        PartEnd(1),
        PartStart(2, ToolCall("toolu_1", "apply_patch", "")),
        Delta(2, '{"input": "*** Be'),
        Delta(2, 'gin"}'),
        PartEnd(2),
        PartStart(3, ToolCall("toolu_2", "read", '{"p":1}')),
        PartEnd(3),
        Finish(StopReason.TOOL_CALLS, Usage(input=1, output=2)),
    ]
    items = data_of(encode(events, request))
    assert all("type" not in item for item in items[:-1])
    deltas = [item["choices"][0]["delta"] for item in items[:-1] if item["choices"]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "On it."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "toolu_1",
                    "type": "custom",
                    "custom": {"name": "apply_patch", "input": "*** Begin"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "toolu_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"p":1}'},
                }
            ]
        },
        {},
    ]
    assert items[0]["created"] == 0
    assert items[-2]["choices"][0]["finish_reason"] == "tool_calls"  # no usage: not asked


def test_events_before_start_and_after_finish() -> None:
    encoder = stream_encoder(None)
    first = encoder.encode(PartStart(0, Text("hi")))
    assert loads(sse(first)[0].data)["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert loads(sse(first)[1].data)["choices"][0]["delta"] == {"content": "hi"}
    assert encoder.encode(Finish(StopReason.END)).endswith(b"data: [DONE]\n\n")
    assert encoder.encode(Delta(0, "late")) == b"" and encoder.close() == b""


ident = st.text(string.ascii_letters + string.digits, min_size=1, max_size=8)
fragment = st.text(min_size=1, max_size=6)


@st.composite
def chat_stream(draw: st.DrawFn) -> tuple[bytes, list[str], list[tuple[str, str]]]:
    """A stream as OpenAI-compatible servers send it, with what it should decode to."""
    key = draw(st.sampled_from(["reasoning_content", "reasoning"]))
    thoughts = draw(st.lists(fragment, max_size=3))
    texts = draw(st.lists(fragment, max_size=3))
    calls = draw(
        st.lists(
            st.tuples(ident, ident, st.sampled_from(["function", "custom"]), st.lists(fragment)),
            max_size=3,
        )
    )
    order = draw(st.permutations([i for i, call in enumerate(calls) for _ in call[3]]))
    reason = draw(st.sampled_from(["stop", "length", "tool_calls", "function_call", "eos"]))
    usage = draw(st.none() | st.just(USAGE))
    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({key: text}) for text in thoughts]
    parts += [chunk({"content": text}) for text in texts]
    for i, (call_id, name, kind, _) in enumerate(calls):
        field = "arguments" if kind == "function" else "input"
        entry = {"index": i, "id": call_id, "type": kind, kind: {"name": name, field: ""}}
        parts.append(chunk({"tool_calls": [entry]}))
    sent = [0] * len(calls)
    for i in order:
        kind, pieces = calls[i][2], calls[i][3]
        field = "arguments" if kind == "function" else "input"
        delta = {"index": i, kind: {field: pieces[sent[i]]}}
        sent[i] += 1
        parts.append(chunk({"tool_calls": [delta]}))
    parts.append(chunk({}, reason))
    if usage is not None:
        parts.append(chunk(None, usage=usage))
    expected_text = ["".join(thoughts)] if thoughts else []
    expected_text += ["".join(texts)] if texts else []
    expected_calls = [(call[0], "".join(call[3])) for call in calls]
    return b"".join([*parts, DONE]), expected_text, expected_calls


@settings(max_examples=200, deadline=None)
@given(chat_stream(), st.integers(0, 40))
def test_stream_law(stream: tuple[bytes, list[str], list[tuple[str, str]]], step: int) -> None:
    raw, texts, calls = stream
    events = decode(raw, step)
    encoded = encode(events)  # before accumulating: the Accumulator grows the parts it is given
    resp = accumulate(events)
    assert [p.text for p in resp.message.parts if isinstance(p, Text | Reasoning)] == texts
    assert [(p.id, p.arguments) for p in resp.message.parts if isinstance(p, ToolCall)] == calls
    assert accumulate(decode(encoded)) == resp


def test_choices_past_the_first_are_skipped_without_harm() -> None:
    """With ``n`` > 1 the choices interleave; the canonical response is choice 0, and the
    observer of a relayed stream (which passes every choice through) does not break on the
    others."""

    def of(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {**HEAD, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}
        return b"data: " + dumps(body) + b"\n\n"

    raw = b"".join(
        [
            of(0, {"role": "assistant", "content": ""}),
            of(1, {"role": "assistant", "content": ""}),
            of(1, {"content": "Second "}),
            of(0, {"content": "First "}),
            of(1, {"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "f"}}]}),
            of(0, {"content": "answer."}),
            of(1, {}, "tool_calls"),
            of(0, {}, "stop"),
            chunk(None, usage=USAGE),
            DONE,
        ]
    )
    resp = accumulate(decode(raw))
    assert resp.message.parts == [Text("First answer.")]
    assert resp.stop_reason is StopReason.END and resp.usage.input == 19
    observer = StreamObserver(Wire.CHAT)
    for i in range(0, len(raw), 7):
        observer.feed(raw[i : i + 7])
    observed = observer.close()
    assert observer.broken is None and observed is not None
    assert observed.message.parts == [Text("First answer.")]
