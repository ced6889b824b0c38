"""Canonical stream events to a Responses SSE stream, as the API sends it::

    response.created, response.in_progress,
    per output item: response.output_item.added, its content events, response.output_item.done
    response.completed | response.incomplete | response.failed      (or an ``error`` event)

Every event has an ``event:`` line equal to its ``type`` and a ``sequence_number`` counting from
0. ``response.created`` carries the response object in progress (id, model, the request settings
echoed from the client's request); the terminal event carries it finished, with every output
item and the usage. Consecutive text parts share one message item; each call, reasoning part
and hosted-tool item is its own item. A ``Finish`` without usage waits for a later ``Finish``
that has it (the Chat wire reports usage after the stop reason) or for ``close``; a stream
that never had one ends with ``"usage": null``, never zeros it was not sent.
"""

from __future__ import annotations

from skillstate.conversation import (
    Delta,
    Event,
    Failure,
    Finish,
    Json,
    Opaque,
    PartEnd,
    PartStart,
    ProtocolError,
    Reasoning,
    Request,
    Start,
    Text,
    ToolCall,
    Usage,
    Wire,
)
from skillstate.protocols.openai_responses.content import opaque_data
from skillstate.protocols.openai_responses.echo import ECHO_KEYS, custom_names, echo, item_ids
from skillstate.protocols.openai_responses.errors import event_code
from skillstate.protocols.openai_responses.response import FAILED
from skillstate.protocols.openai_responses.stream_items import (
    CallItem,
    MessageItem,
    Out,
    ReasoningItem,
    TextPart,
)
from skillstate.protocols.openai_responses.usage import encode_usage, status_for
from skillstate.protocols.sse import encode_event
from skillstate.support import jsonio

_Open = TextPart | CallItem | ReasoningItem | tuple[int, Json]


class ResponsesStreamEncoder:
    __slots__ = (
        "_base",
        "_custom",
        "_ended",
        "_finish",
        "_ids",
        "_message",
        "_open",
        "_output",
        "_own",
        "_request",
        "_seq",
        "_usage",
    )

    def __init__(self, request: Request | None) -> None:
        self._request = request
        self._custom = custom_names(request)
        self._seq = 0
        self._own = False
        self._base: Json | None = None
        self._ids = item_ids("")
        self._output: list[Json | None] = []
        self._open: dict[int, _Open] = {}
        self._message: MessageItem | None = None
        self._finish: Finish | None = None
        self._usage: Usage | None = None
        self._ended = False

    def encode(self, event: Event) -> bytes:
        if self._ended:
            return b""
        if isinstance(event, Start):
            return self._frame(self._start(event))
        out = self._start(None) if self._base is None else []
        if isinstance(event, Delta):
            out += self._delta(event)
        elif isinstance(event, PartStart):
            out += self._part_start(event)
        elif isinstance(event, PartEnd):
            out += self._part_end(event.index)
        elif isinstance(event, Finish):
            out += self._on_finish(event)
        elif isinstance(event, Failure):
            self._ended = True
            fields = {"code": event_code(event.kind), "message": event.message, "param": None}
            out.append(("error", fields))
        return self._frame(out)

    def close(self) -> bytes:
        if self._ended or self._finish is None:
            return b""
        return self._frame(self._terminal(self._finish))

    # -- framing and the response object -------------------------------------------------

    def _frame(self, out: Out) -> bytes:
        chunks: list[bytes] = []
        for kind, fields in out:
            data = {"type": kind, "sequence_number": self._seq, **fields}
            self._seq += 1
            chunks.append(encode_event(jsonio.dumps_str(data), kind))
        return b"".join(chunks)

    def _start(self, event: Start | None) -> Out:
        if self._base is not None:
            return []
        self._own = event is not None and event.source is Wire.RESPONSES
        base: Json = dict(event.extra) if event is not None and self._own else {}
        if self._request is not None or not self._own:
            base = {k: v for k, v in base.items() if k not in ECHO_KEYS} | echo(self._request)
        response_id = event.id if event is not None else ""
        self._ids = item_ids(response_id)
        self._usage = event.usage if event is not None else None
        created = event.created if event is not None else None
        if created is None:  # a wire with no creation time: dated when the request came
            created = self._request.received if self._request is not None else None
        base.update(id=response_id, object="response", created_at=created or 0)
        base["model"] = event.model if event is not None else ""
        self._base = base
        opening = {**base, "status": "in_progress", "output": [], "usage": None}
        opening.update(error=None, incomplete_details=None)
        return [
            ("response.created", {"response": opening}),
            ("response.in_progress", {"response": opening}),
        ]

    def _on_finish(self, event: Finish) -> Out:
        if self._finish is not None and event.stop_reason is None:
            event = Finish(self._finish.stop_reason, event.usage, event.extra)
        self._finish = event
        return self._terminal(event) if event.usage is not None else []

    def _terminal(self, finish: Finish) -> Out:
        out = self._end_all()
        self._ended = True
        usage = self._usage
        if finish.usage is not None:
            usage = (usage or Usage()).updated(finish.usage)
        status, incomplete = status_for(finish.stop_reason)
        response: Json = {**(self._base or {}), "status": status}
        response["output"] = [item for item in self._output if item is not None]
        encoded = encode_usage(usage) if usage is not None else None
        response.update(usage=encoded, incomplete_details=incomplete, error=None)
        if status == "failed":
            error = finish.extra.get("error") if self._own else None
            response["error"] = error if isinstance(error, dict) else FAILED
        kind = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(status)
        return [*out, (kind or "response.completed", {"response": response})]

    # -- parts ---------------------------------------------------------------------------

    def _slot(self) -> int:
        self._output.append(None)
        return len(self._output) - 1

    def _part_start(self, event: PartStart) -> Out:
        part = event.part
        if isinstance(part, Text) or (isinstance(part, Opaque) and "seq" in part.hints):
            return self._text_start(event.index, part)
        out = self._leave_message()
        if isinstance(part, ToolCall):
            self._open[event.index], opened = CallItem.open(
                self._slot(), part, self._own, self._custom, self._ids
            )
        elif isinstance(part, Reasoning):
            self._open[event.index], opened = ReasoningItem.open(
                self._slot(), part, self._own, self._ids
            )
        elif isinstance(part, Opaque):
            index, data = self._slot(), opaque_data(part)
            self._open[event.index] = (index, data)
            opened = [("response.output_item.added", {"output_index": index, "item": data})]
        else:
            raise ProtocolError(f"A {type(part).__name__} part cannot be streamed on this wire.")
        return out + opened

    def _text_start(self, index: int, part: Text | Opaque) -> Out:
        out: Out = []
        message = self._message
        key = part.hints.get("seq", "new") if self._own else "new"
        if message is None or message.key != key:
            out += self._leave_message()
            message = MessageItem.open(self._slot(), part, self._own, self._ids)
            self._message = message
            out += message.added()
        self._open[index], opened = TextPart.open(message, part, self._own)
        return out + opened

    def _leave_message(self) -> Out:
        """The current message item takes no more parts; it is done once its parts are."""
        message, self._message = self._message, None
        if message is None or message.open_parts:
            return []
        return self._close_message(message)

    def _close_message(self, message: MessageItem) -> Out:
        item, out = message.done()
        self._output[message.output_index] = item
        return out

    def _delta(self, event: Delta) -> Out:
        state = self._open.get(event.index)
        if isinstance(state, TextPart | CallItem):
            return state.delta(event.text)
        if isinstance(state, ReasoningItem):
            return state.delta(event.text, event.signature)
        return []

    def _part_end(self, index: int) -> Out:
        state = self._open.pop(index, None)
        if state is None:
            return []
        if isinstance(state, TextPart):
            out = state.end()
            message = state.message
            if message is not self._message and not message.open_parts and not message.closed:
                out += self._close_message(message)
            return out
        if isinstance(state, tuple):
            output_index, item = state
            done: Out = [
                ("response.output_item.done", {"output_index": output_index, "item": item})
            ]
        else:
            item, done = state.end()
            output_index = state.output_index
        self._output[output_index] = item
        return done

    def _end_all(self) -> Out:
        out: Out = []
        for index in list(self._open):
            out += self._part_end(index)
        message, self._message = self._message, None
        if message is not None and not message.closed:
            out += self._close_message(message)
        return out
