"""What the scripted upstream received: one ``RecordedRequest`` per HTTP request, kept exactly
(raw body bytes included) so a test can check what the gateway sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDictProxy

from skillstate.conversation import Wire


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received. ``index`` is its position in ``ScriptedUpstream.requests``;
    ``json`` is the parsed body, or None when the body is empty or not JSON; ``wire`` is the
    wire of the route (None for model listing and unknown routes)."""

    index: int
    method: str
    path: str
    query: Mapping[str, str]
    headers: CIMultiDictProxy[str]
    body: bytes
    json: Any
    wire: Wire | None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (``"stream": true`` on every wire)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True

    @property
    def model(self) -> str | None:
        value = self.json.get("model") if isinstance(self.json, dict) else None
        return value if isinstance(value, str) else None
