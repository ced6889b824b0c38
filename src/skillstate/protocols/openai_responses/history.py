"""``previous_response_id`` for an upstream that is not the Responses API.

The Responses API keeps each response it made (unless the request said ``store: false``) and
continues from it when a later request names it: that request's ``input`` follows the earlier
request's input and the response's output (the earlier ``instructions`` are not carried over).
Another provider has no such memory, so the gateway keeps what it answered and expands the
reference itself; these are the wire's side of that, pure.
"""

from __future__ import annotations

import dataclasses

from skillstate.conversation import Json, Message, Request, Wire

FIELD = "previous_response_id"


def previous_response(request: Request) -> str | None:
    """The response ``request`` continues from, if it names one."""
    if request.source is not Wire.RESPONSES:
        return None
    value = request.extra.get(FIELD)
    return value if isinstance(value, str) and value else None


def kept(request: Request) -> bool:
    """Whether the client lets its response be kept (``store`` defaults to true)."""
    return request.source is Wire.RESPONSES and request.extra.get("store") is not False


def continued_from(request: Request, earlier: list[Message]) -> Request:
    """``request`` with the conversation it continues written out in front of its input, and
    no reference left for an upstream that could not read it."""
    extra = {key: value for key, value in request.extra.items() if key != FIELD}
    return dataclasses.replace(request, messages=[*earlier, *request.messages], extra=extra)


def not_found(response_id: str) -> Json:
    """The Responses API's own error for a reference it does not know."""
    return {
        "error": {
            "message": f"Previous response with id '{response_id}' not found.",
            "type": "invalid_request_error",
            "param": FIELD,
            "code": "previous_response_not_found",
        }
    }
