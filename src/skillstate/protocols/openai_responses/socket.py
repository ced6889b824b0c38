"""The Responses API over a WebSocket, sans I/O: what a client's text frame asks for, the
conversation a socket chains, and the frames the gateway answers with.

The transport (OpenAI's ``responses_websockets=2026-02-06`` beta, as Codex 0.171 speaks it with
``supports_websockets`` on its provider): the client upgrades ``GET /v1/responses`` and then
sends one text frame per request, ``{"type": "response.create", ...}`` holding the fields of a
``POST /v1/responses`` body. The server answers each with the events of the streamed reply,
one JSON event per text frame (the ``data`` of each SSE event, nothing else), the last of them
``response.completed`` (or ``response.failed``/``response.incomplete``); a request refused
before it started is one ``{"type": "error", "status": ..., "error": {...}}`` frame, which the
client reads as the HTTP error of that status.

Two things only the socket has:

* **A warmup.** ``"generate": false`` asks for no output: the server keeps the input and
  answers ``response.created`` then ``response.completed`` with an empty output, so that the
  next request can continue it (Codex sends one when it opens the socket, before the turn).
* **Chaining without storage.** With ``store: false`` the client still sends
  ``previous_response_id`` on the socket: the server keeps the last response of the
  connection, and a request naming it carries only the items after it. ``Chain.expand``
  writes such a request out in full (the last request's input, the items the last response
  output, as the client saw them, then the new items) and drops the reference, so that what
  follows is an ordinary self-contained request; a reference to anything else is left as it
  came (an HTTP ``previous_response_id``, served as the HTTP route serves it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Json

CREATE = "response.create"
"""The type of the one client frame that asks for a response."""
PROCESSED = "response.processed"
"""A client frame that acknowledges a response and asks for nothing."""
BETA = "responses_websockets=2026-02-06"
"""The ``OpenAI-Beta`` value the client sends on the upgrade."""
_CONTROL = ("type", "generate")
"""Fields of a frame that are the socket's own, never part of the request body."""


class FrameError(ValueError):
    """A client frame that is not a request the socket can serve, with the reason."""


@dataclass(frozen=True, slots=True)
class Create:
    """One ``response.create`` frame: the body of the request it stands for (``stream`` set,
    the socket's own fields taken off), and whether it asks for output at all."""

    body: dict[str, Any]
    generate: bool = True


def decode_frame(text: str, loads: Any) -> Create | None:
    """The request a text frame asks for; None for a frame that asks for nothing
    (``response.processed``). ``loads`` parses JSON (the gateway's own, depth-limited)."""
    try:
        frame = loads(text)
    except ValueError as exc:
        raise FrameError(f"frame is not valid JSON: {exc}") from exc
    if not isinstance(frame, dict):
        raise FrameError("frame is not a JSON object")
    kind = frame.get("type")
    if kind == PROCESSED:
        return None
    if kind != CREATE:
        raise FrameError(f"frame type {kind!r} is not {CREATE!r}")
    body = {key: value for key, value in frame.items() if key not in _CONTROL}
    body["stream"] = True
    return Create(body, generate=frame.get("generate") is not False)


@dataclass(slots=True)
class Chain:
    """The last response of one socket: the full input of the request it answered and the
    items it output, under its id (None before the first)."""

    response_id: str | None = None
    input: list[Json] = field(default_factory=list)
    output: list[Json] = field(default_factory=list)

    def expand(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` written out in full when it continues the socket's last response; else as
        it came."""
        previous = body.get("previous_response_id")
        if previous is None or previous != self.response_id:
            return body
        added = _items(body.get("input"))
        full = {key: value for key, value in body.items() if key != "previous_response_id"}
        full["input"] = [*self.input, *self.output, *added]
        return full

    def keep(self, body: dict[str, Any], response_id: str, output: list[Json]) -> None:
        """Remember the request ``body`` (as written out) and what its response output."""
        self.input = _items(body.get("input"))
        self.response_id = response_id
        self.output = output


def _items(given: object) -> list[Json]:
    """A request's ``input`` as a list of items: a string is one user message."""
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    if isinstance(given, dict):
        return [given]
    return list(given) if isinstance(given, list) else []


class Reply:
    """Watches the events of one reply on their way to the client: the response's id and the
    items it output, kept in order (``response.output_item.done``; the final response's own
    list where no item came one by one), and whether it completed."""

    __slots__ = ("_items", "_listed", "completed", "response_id")

    def __init__(self) -> None:
        self._items: dict[int, Json] = {}
        self._listed: list[Json] = []
        self.response_id: str | None = None
        self.completed = False

    def see(self, event: Json) -> None:
        kind = event.get("type")
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            self.response_id = response["id"]
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            index = event.get("output_index")
            self._items[index if isinstance(index, int) else len(self._items)] = event["item"]
        if kind == "response.completed":
            self.completed = True
            output = response.get("output") if isinstance(response, dict) else None
            if isinstance(output, list):
                self._listed = [item for item in output if isinstance(item, dict)]

    @property
    def output(self) -> list[Json]:
        if self._items:
            return [self._items[index] for index in sorted(self._items)]
        return list(self._listed)


def response_id(token: str) -> str:
    """A response id of the API's shape, from a random ``token`` the caller draws."""
    return "resp_" + token


def warmup(body: dict[str, Any], response_id: str, created_at: int) -> list[Json]:
    """The events that answer a ``generate: false`` request: created, then completed with
    nothing output."""
    response: Json = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "model": body.get("model"),
        "output": [],
        "usage": None,
    }
    done = copy.deepcopy(response)
    done["status"] = "completed"
    done["usage"] = {
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 0,
    }
    return [
        {"type": "response.created", "sequence_number": 0, "response": response},
        {"type": "response.completed", "sequence_number": 1, "response": done},
    ]


def error_frame(status: int, body: Json | None, message: str) -> Json:
    """The frame that answers a request refused before its reply began: the HTTP status and
    the error object the HTTP route would have sent (``message`` where it sent none)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"message": message, "type": "server_error", "param": None, "code": None}
    return {"type": "error", "status": status, "error": error}
