"""Canonical stream events, and the accumulator that rebuilds a ``Response`` from them.

A wire's stream decoder turns that wire's SSE events into these; a stream encoder turns these
into another wire's SSE bytes. The order is always::

    Start, (PartStart, Delta*, PartEnd)*, Finish

where parts are numbered by ``index`` in the order they open (parts of different indexes may
interleave, as parallel tool calls do on the Chat wire). ``Failure`` may come at any point and
ends the stream.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

from skillstate.conversation.model import (
    ErrorKind,
    Json,
    Message,
    Part,
    Reasoning,
    Response,
    StopReason,
    Text,
    ToolCall,
    Usage,
    Wire,
)


@dataclass(slots=True)
class Start:
    """The stream opens. ``extra`` holds wire fields of ``source`` (another wire ignores them);
    ``created`` is the creation time in Unix seconds when known."""

    id: str
    model: str
    source: Wire | None = None
    usage: Usage | None = None
    created: int | None = None
    extra: Json = field(default_factory=dict)


@dataclass(slots=True)
class PartStart:
    """A part opens. ``part`` is a ``Text``, ``ToolCall`` (id and name known, arguments
    possibly empty) or ``Reasoning``, holding whatever content came with the opening."""

    index: int
    part: Part


@dataclass(slots=True)
class Delta:
    """More of part ``index``: text for ``Text``, argument JSON text for ``ToolCall``,
    thinking text for ``Reasoning``; ``signature`` carries a reasoning part's opaque token."""

    index: int
    text: str = ""
    signature: str = ""


@dataclass(slots=True)
class PartEnd:
    index: int


@dataclass(slots=True)
class Finish:
    stop_reason: StopReason | None
    usage: Usage | None = None
    extra: Json = field(default_factory=dict)


@dataclass(slots=True)
class Failure:
    """The upstream reported an error mid-stream."""

    message: str
    kind: ErrorKind = ErrorKind.UPSTREAM
    status: int = 500


Event = Start | PartStart | Delta | PartEnd | Finish | Failure


class Accumulator:
    """Rebuilds the canonical ``Response`` from events, without holding anything back.

    Feed every event with ``add``; ``response()`` gives what has been seen so far (complete
    once ``Finish`` arrived), its usage None when neither ``Start`` nor ``Finish`` had one."""

    __slots__ = ("_failure", "_finish", "_order", "_parts", "_start", "source")

    def __init__(self, source: Wire) -> None:
        self.source = source
        self._start: Start | None = None
        self._parts: dict[int, Part] = {}
        self._order: list[int] = []
        self._finish: Finish | None = None
        self._failure: Failure | None = None

    def add(self, event: Event) -> None:
        if isinstance(event, Delta):
            part = self._parts.get(event.index)
            if isinstance(part, Text):
                part.text += event.text
            elif isinstance(part, ToolCall):
                part.arguments += event.text
            elif isinstance(part, Reasoning):
                part.text += event.text
                if event.signature:
                    part.signature = (part.signature or "") + event.signature
        elif isinstance(event, PartStart):
            if event.index not in self._parts:
                self._order.append(event.index)
            # A copy: deltas grow it, and the event may still be read by an encoder.
            self._parts[event.index] = copy.copy(event.part)
        elif isinstance(event, Start):
            self._start = event
        elif isinstance(event, Finish):
            if self._finish is not None and event.usage is None:
                event.usage = self._finish.usage
            self._finish = event
        elif isinstance(event, Failure):
            self._failure = event

    @property
    def finished(self) -> bool:
        return self._finish is not None

    @property
    def started(self) -> bool:
        return self._start is not None

    @property
    def failure(self) -> Failure | None:
        return self._failure

    def response(self) -> Response:
        start = self._start or Start(id="", model="")
        usage = start.usage
        finish = self._finish
        if finish is not None and finish.usage is not None:
            usage = (usage or Usage()).updated(finish.usage)
        parts = [self._parts[i] for i in self._order]
        return Response(
            id=start.id,
            model=start.model,
            message=Message(role="assistant", parts=parts),
            source=self.source,
            stop_reason=finish.stop_reason if finish else None,
            usage=usage,
            created=start.created,
            extra=dict(start.extra) if start.source in (None, self.source) else {},
        )


def events_of(response: Response) -> list[Event]:
    """``response`` as the canonical stream a provider would have sent for it."""
    out: list[Event] = [Start(response.id, response.model, created=response.created)]
    for index, part in enumerate(response.message.parts):
        if isinstance(part, Text):
            out += [PartStart(index, dataclasses.replace(part, text="")), Delta(index, part.text)]
        else:
            out.append(PartStart(index, part))
        out.append(PartEnd(index))
    out.append(Finish(response.stop_reason, response.usage))
    return out
