"""A Messages body for a request that came from another wire, built from canonical fields only
(that wire's ``extra`` and ``hints`` are ignored).

What this wire requires, and how the canonical messages are reshaped for it:

* Instructions: ``Request.system`` and the ``system``/``developer`` messages before the first
  other message go to the top-level ``system`` (text blocks, cache markers kept); later ones
  are sent as ``role: "system"`` messages, which this wire accepts mid-conversation.
* Tool results: ``tool`` messages become ``tool_result`` blocks of a user message, and
  consecutive messages of one role coalesce, so the results of a parallel batch and the user
  message after them travel as one user message, results first, in order. Consecutive
  assistant messages coalesce into one model turn the same way.
* What this wire cannot carry raises ``ProtocolError``: another wire's opaque item, an image
  or tool result in an assistant message, a tool call or reasoning in a user message,
  anything but text in an instruction, and what ``formats.check_foreign`` names (an output
  format or choices this wire has no form for). Left out, and only these: empty texts
  (refused by this wire), reasoning with no signature (see ``blocks._encode_reasoning``), and
  a message left with no blocks by those omissions.
"""

from __future__ import annotations

from skillstate.conversation import (
    Image,
    Json,
    Message,
    Opaque,
    Part,
    ProtocolError,
    Reasoning,
    Request,
    Text,
    ToolCall,
    ToolResult,
)
from skillstate.protocols.anthropic_messages.blocks import encode_blocks
from skillstate.protocols.anthropic_messages.formats import check_foreign
from skillstate.protocols.anthropic_messages.params import encode_params
from skillstate.protocols.anthropic_messages.tools import encode_tool

#: The canonical part types each Messages role can hold.
_ALLOWED: dict[str, tuple[type, ...]] = {
    "user": (Text, Image, ToolResult, Opaque),
    "assistant": (Text, ToolCall, Reasoning, Opaque),
    "system": (Text,),
}


def encode_foreign(req: Request) -> Json:
    check_foreign(req)
    system = encode_blocks(req.system, native=False)
    messages: list[Json] = []
    for i, message in enumerate(req.messages):
        role = _role(message)
        blocks = _blocks(message, role, f"messages[{i}]")
        if role == "system" and not messages:
            system.extend(blocks)
        elif not blocks:
            continue
        elif messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    out: Json = {"model": req.model}
    params = encode_params(req.params, {}, native=False, has_tools=bool(req.tools))
    out["max_tokens"] = params.pop("max_tokens")
    if system:
        out["system"] = system
    out["messages"] = messages
    if req.tools:
        out["tools"] = [encode_tool(tool, native=False) for tool in req.tools]
    out.update(params)
    return out


def _role(message: Message) -> str:
    if message.role in ("system", "developer"):
        return "system"
    return "user" if message.role == "tool" else message.role


def _blocks(message: Message, role: str, path: str) -> list[Json]:
    check_parts(message.parts, role, message.role, path)
    return encode_blocks(message.parts, native=False)


def check_parts(parts: list[Part], role: str, source_role: str, path: str) -> None:
    """Refuse a part a message of this wire's ``role`` cannot hold."""
    allowed = _ALLOWED[role]
    for part in parts:
        if not isinstance(part, allowed):
            name = type(part).__name__
            raise ProtocolError(
                f"{path}: a {name} part cannot be sent in a {source_role} message"
                " on anthropic-messages",
                param=path,
            )
