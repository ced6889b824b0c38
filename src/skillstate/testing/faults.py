"""Faults the scripted upstream can inject into one reply (``Reply(fault=Fault.RESET)``), the
ways real providers fail: what each one does on the wire.

* ``HANG``: no answer at all, until the client gives up.
* ``SLOW``: the answer starts only after ``Reply.delay`` seconds.
* ``RESET``: a stream sends its first event, then the connection is dropped; a JSON answer is
  dropped before any byte.
* ``MALFORMED_SSE``: a stream sends its first event, then an event whose data is not JSON, then
  ends.
* ``TRUNCATED_JSON``: a JSON answer cut in half (a complete HTTP response holding junk).
* ``CUT_SHORT``: a stream sends the first half of its bytes (most often ending inside an
  event), then ends with a clean close, before its terminal event (``finish_reason`` and ``[DONE]``,
  ``response.completed``, ``message_stop``); a JSON answer is cut in half as ``TRUNCATED_JSON``.
* ``EMPTY``: a 200 that ends cleanly with nothing in it: a stream of no events, an empty JSON
  body.
* ``NO_FINISH``: a stream whose finish never comes, ended as if it were whole: Chat's chunks
  without the one carrying ``finish_reason`` (nor the usage after it), then ``[DONE]`` (as
  llama.cpp's server ends a stream it dropped); Responses and Anthropic streams without their
  terminal events (``response.completed``; ``message_delta`` and ``message_stop``), closed
  cleanly. A JSON answer is whole.
* ``HUGE``: the reply's text padded to ``HUGE_BYTES``.

Rate limits and server errors are ``Reply.failure(429, ..., headers={"retry-after": "1"})`` and
``Reply.failure(500, ...)``.
"""

from __future__ import annotations

from enum import StrEnum


class Fault(StrEnum):
    HANG = "hang"
    SLOW = "slow"
    RESET = "reset"
    MALFORMED_SSE = "malformed-sse"
    TRUNCATED_JSON = "truncated-json"
    CUT_SHORT = "cut-short"
    EMPTY = "empty"
    NO_FINISH = "no-finish"
    HUGE = "huge"


HUGE_BYTES = 8 * 1024 * 1024
"""How long a ``HUGE`` reply's text is."""

MALFORMED_EVENT = b'data: {"this is": not json\n\n'
