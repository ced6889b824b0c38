"""An archived span as plain text: what ``recall`` searches and pages through.

Every piece of content is kept whole (text, call arguments, tool output, reasoning); wire
details that the model cannot use (``extra``, ``hints``, cache markers, signatures) are left
out. The exact messages are what ``hashing.read_span`` returns; this is their reading copy.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillstate.conversation import (
    ArchiveRef,
    Image,
    Message,
    Opaque,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)
from skillstate.support import jsonio


def span_text(messages: Sequence[Message], first_turn: int | None = None) -> str:
    """One block per message, headed ``## <n> <role>``; ``n`` counts messages from
    ``first_turn`` when given (the span's place in the session), else from 1."""
    start = 1 if first_turn is None else first_turn
    blocks = []
    for number, message in enumerate(messages, start=start):
        lines = [f"## {number} {message.role}"]
        lines.extend(_part_text(part) for part in message.parts)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _part_text(part: Part) -> str:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, Image):
        return _image_text(part)
    if isinstance(part, ToolCall):
        return f"[tool call {part.name} id={part.id}]\n{part.arguments}"
    if isinstance(part, ToolResult):
        head = f"[tool result id={part.call_id}{' error' if part.is_error else ''}]"
        return "\n".join([head, *(_part_text(item) for item in part.content)])
    if isinstance(part, Reasoning):
        return "[reasoning, redacted]" if part.redacted else f"[reasoning]\n{part.text}"
    if isinstance(part, Opaque):
        return f"[{part.wire.value} item]\n{jsonio.dumps_str(part.data)}"
    if isinstance(part, ArchiveRef):
        return f"[archived {part.ref}] {part.summary}".rstrip()
    raise TypeError(f"not a canonical part: {type(part).__name__}")


def _image_text(image: Image) -> str:
    if image.url is not None and not image.url.startswith("data:"):
        return f"[image {image.url}]"
    if image.url is not None:
        return f"[image {image.url[: image.url.find(',') + 1]}..., {len(image.url)} characters]"
    size = len(image.data or "")
    return f"[image {image.media_type or 'unknown type'}, {size} base64 characters]"
