"""A Chat Completions body for a request that came from another wire, built from canonical
fields only (that wire's ``extra`` and ``hints`` are ignored).

How the canonical messages are reshaped for this wire (what each message may hold, and what is
refused: see ``transcript``):

* ``Request.system`` becomes one leading ``system`` message whose string content joins the
  texts with a blank line.
* Consecutive assistant messages merge into one (one assistant message per model turn).
* Tool results in a ``user`` message are split out, in order, into ``tool`` messages placed
  before the rest of that message. This wire has no error flag on a tool result: the text of
  an ``is_error`` result is sent exactly as it is, and it is that text which tells the model
  the call failed.
* A ``tool`` message holds text only, so the images of tool results (Claude Code's ``Read``
  of a picture) travel in one ``user`` message right after the batch's ``tool`` messages,
  each result's images behind a text naming it (``image from tool result <call id>``);
  the ``tool`` message keeps the result's text. Consecutive ``tool`` messages coalesce for
  this, so a batch's images come after all of its results.

Tools: see ``tools``; the parameters (``max_completion_tokens``, ``stream_options``, the
effort for a thinking budget, the answer's format): see ``params`` and ``outputs``.
"""

from __future__ import annotations

from skillstate.conversation import Json, Message, Request, ToolResult
from skillstate.protocols.openai_chat.params import encode_params
from skillstate.protocols.openai_chat.tool_calls import custom_tool_names
from skillstate.protocols.openai_chat.tools import encode_tools
from skillstate.protocols.openai_chat.transcript import (
    encode_each,
    encode_message,
    result_images,
    system_message,
)


def encode_foreign(req: Request) -> Json:
    body: Json = {"model": req.model, "messages": _messages(req)}
    if req.tools:
        body["tools"] = encode_tools(req.tools, native=False)
    encode_params(req, body)
    return body


def _messages(req: Request) -> list[Json]:
    custom_names = custom_tool_names(req)

    def encode(message: Message) -> list[Json]:
        encoded = encode_message(message, False, custom_names)
        if message.role == "assistant":
            return encoded
        results = sum(isinstance(part, ToolResult) for part in message.parts)
        return [
            *encoded[:results],
            *result_images(message.parts, gateway_only=False),
            *encoded[results:],
        ]

    return system_message(req.system) + encode_each(_coalesce(req.messages), encode)


def _coalesce(messages: list[Message]) -> list[tuple[int, Message]]:
    """Consecutive assistant messages as one, numbered by the first of them; consecutive
    tool messages too (one batch of results)."""
    merged: list[tuple[int, Message]] = []
    for i, message in enumerate(messages):
        role = message.role
        if merged and role in ("assistant", "tool") and merged[-1][1].role == role:
            first, previous = merged[-1]
            merged[-1] = (first, Message(role, [*previous.parts, *message.parts]))
        else:
            merged.append((i, message))
    return merged
