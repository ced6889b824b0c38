"""Error bodies of the Chat Completions wire: OpenAI's one error shape, shared with the
Responses wire (see ``protocols.openai_errors`` for the mapping). A stream sends the same
``error`` object as a chunk of its own, read by ``stream_error``.
"""

from __future__ import annotations

from skillstate.protocols.openai_errors import decode_error, error_body, stream_error

__all__ = ["decode_error", "error_body", "stream_error"]
