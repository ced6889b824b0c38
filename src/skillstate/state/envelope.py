"""Paper mode's reply envelope: ``{"state_patch": {...}, "action": ...}``.

In ``paper`` mode the model answers every step with one JSON object holding exactly two keys:
``state_patch``, a JSON Merge Patch of Σ, and ``action``, what it does next (any JSON value,
a string included). The object is the whole reply, or sits in a fenced ``json`` code block
with prose around it (models often explain first); when there are several such blocks, the
last one counts, since a model drafts before it commits. Anything else is an ``EnvelopeError``
whose ``correction_note`` is sent back on a bounded, non-streaming retry. Whether the patch
fits Σ's schema is not checked here: ``merge.apply_patch`` is the one validator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skillstate.conversation.model import Json
from skillstate.support import jsonio

ENVELOPE_KEYS = ("state_patch", "action")

ENVELOPE_SHAPE = '{"state_patch": {<changes to the state>}, "action": <your next action>}'
"""The envelope as the model is shown it, in P and in every correction note."""

# CommonMark §4.5: an opening fence is 3+ backticks (indented at most 3 spaces) with an info
# string; the closing fence is at least as long and has none. An unclosed block runs to the end.
_OPENING = re.compile(r" {0,3}(`{3,})[ \t]*json[ \t]*\Z", re.IGNORECASE)
_CLOSING = re.compile(r" {0,3}(`{3,})[ \t]*\Z")


@dataclass(frozen=True, slots=True)
class Envelope:
    """A well-formed reply: the patch to apply and the model's action."""

    state_patch: Json
    action: Any


@dataclass(frozen=True, slots=True)
class EnvelopeError:
    """Why a reply is not an envelope. ``code`` is stable (for counting and tests):
    ``no_json``, ``invalid_json``, ``not_object``, ``missing_keys``, ``extra_keys``,
    ``patch_not_object``; ``reason`` is one sentence for the model."""

    code: str
    reason: str


def parse_envelope(text: str) -> Envelope | EnvelopeError:
    """The envelope in ``text``: the whole reply if it is JSON, else the last fenced ``json``
    block; an ``EnvelopeError`` when neither holds a valid envelope."""
    value = _json_in(text)
    return value if isinstance(value, EnvelopeError) else _envelope(value)


def parse_json_object(text: str) -> Json | EnvelopeError:
    """The JSON object in ``text``, found as ``parse_envelope`` finds it, without the
    envelope's keys."""
    value = _json_in(text)
    if isinstance(value, EnvelopeError | dict):
        return value
    return EnvelopeError("not_object", "the JSON is not an object")


def _json_in(text: str) -> Any:
    """The whole reply if it is JSON, else its last fenced ``json`` block; an
    ``EnvelopeError`` when neither parses."""
    stripped = text.strip()
    whole = _decode(stripped)
    if not isinstance(whole, EnvelopeError):
        return whole
    block = _last_json_block(text)
    if block is not None:
        return _decode(block)
    if stripped.startswith(("{", "[")):
        return whole
    return EnvelopeError("no_json", "the reply is neither a JSON object nor has a ```json block")


def _last_json_block(text: str) -> str | None:
    """The body of the last fenced code block whose info string is ``json``."""
    found: str | None = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        index += 1
        if opening is None:
            continue
        body: list[str] = []
        while index < len(lines):
            closing = _CLOSING.match(lines[index])
            index += 1
            if closing is not None and len(closing.group(1)) >= len(opening.group(1)):
                break
            body.append(lines[index - 1])
        found = "\n".join(body)
    return found


def _decode(source: str) -> Any:
    if not source.strip():
        return EnvelopeError("invalid_json", "the JSON is empty")
    try:
        return jsonio.loads(source)
    except (ValueError, RecursionError) as error:
        return EnvelopeError("invalid_json", f"the JSON does not parse ({error})")


def _envelope(value: Any) -> Envelope | EnvelopeError:
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else "not an object"
        return EnvelopeError("not_object", f"the JSON is {kind}; it must be one object")
    missing = [key for key in ENVELOPE_KEYS if key not in value]
    if missing:
        names = " and ".join(repr(key) for key in missing)
        return EnvelopeError("missing_keys", f"the object lacks {names}")
    extra = sorted(str(key) for key in value if key not in ENVELOPE_KEYS)
    if extra:
        names = ", ".join(repr(key) for key in extra)
        return EnvelopeError(
            "extra_keys", f"the object has keys besides state_patch and action: {names}"
        )
    patch = value["state_patch"]
    if not isinstance(patch, dict):
        return EnvelopeError(
            "patch_not_object",
            f"state_patch must be an object (use {{}} for no change), not {_json_type(patch)}",
        )
    return Envelope(patch, value["action"])


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"


def correction_note(error: EnvelopeError) -> str:
    """The note sent back to the model after a malformed reply: what was wrong, and the one
    shape that is accepted."""
    return (
        f"Your last reply could not be used: {error.reason}. "
        f"Reply with exactly one JSON object, {ENVELOPE_SHAPE}, and nothing else "
        "(or put it in one ```json block). state_patch is a JSON Merge Patch of the state: "
        "include only what changed, null deletes a key, {} changes nothing."
    )
