"""Which upstream serves a request: the first configured upstream whose model patterns match."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from skillstate.conversation import Profile, Wire


@dataclass(frozen=True, slots=True)
class Upstream:
    """One provider endpoint. ``wire`` None means "the client's own wire". ``api_key`` lives
    only in memory; ``base_url`` has no trailing ``/v1`` (the gateway appends ``/v1/<route>``)."""

    name: str
    base_url: str
    wire: Wire | None = None
    api_key: str | None = field(default=None, repr=False)
    models: tuple[str, ...] = ("*",)
    headers: tuple[tuple[str, str], ...] = ()
    fallbacks: tuple[str, ...] = ()
    rpm: int | None = None
    tpm: int | None = None
    profile: Profile = Profile.OFFICIAL
    """The dialect of its wire it speaks (``protocols.profiles``): what the gateway's own
    bodies are fitted to, and how its refusals are read."""
    retry_first_byte_timeout: bool = True
    """Whether a call whose first byte did not come in time is tried again (the request may
    still be running there: a local server is one queue)."""

    def serves(self, model: str) -> bool:
        return any(fnmatchcase(model, pattern) for pattern in self.models)

    def wire_for(self, client_wire: Wire) -> Wire:
        return self.wire or client_wire

    def url(self, path: str) -> str:
        return self.base_url + path


def normalize_base_url(url: str) -> str:
    """``https://api.openai.com/v1/`` and ``https://api.openai.com`` name the same base."""
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    return url


class Router:
    __slots__ = ("upstreams",)

    def __init__(self, upstreams: list[Upstream]) -> None:
        self.upstreams = upstreams

    def route(self, model: str) -> Upstream | None:
        for upstream in self.upstreams:
            if upstream.serves(model):
                return upstream
        return None

    def fallbacks(self, upstream: Upstream) -> list[Upstream]:
        """The upstreams ``upstream`` falls back to, in its order."""
        named = {candidate.name: candidate for candidate in self.upstreams}
        return [named[name] for name in upstream.fallbacks if name in named]
