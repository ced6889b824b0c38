"""Which upstream serves a request: the first configured upstream whose model patterns match,
or the ChatGPT backend for a Responses request that carries a ChatGPT login (Codex signed in
with ChatGPT: that token is good only there, so no model pattern can send it elsewhere)."""

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
    versioned: bool = True
    """Whether its routes sit under ``/v1`` (the gateway's paths are ``/v1/<route>``); the
    ChatGPT backend's sit right under its base (``.../backend-api/codex/responses``)."""

    def serves(self, model: str) -> bool:
        return any(fnmatchcase(model, pattern) for pattern in self.models)

    def wire_for(self, client_wire: Wire) -> Wire:
        return self.wire or client_wire

    def url(self, path: str) -> str:
        if not self.versioned and path.startswith(VERSION + "/"):
            path = path[len(VERSION) :]
        return self.base_url + path


VERSION = "/v1"

CHATGPT = "chatgpt"
"""The name the ChatGPT backend goes by, in the ledger and the ``x-skillstate-upstream``
header."""


def chatgpt_upstream(base_url: str) -> Upstream:
    """The ChatGPT backend at ``base_url`` (the ``chatgpt_base_url`` setting): OpenAI
    Responses in its own dialect (``Profile.CHATGPT``), no key of the gateway's (the client's
    login goes up as it came), no fallback (the login is good nowhere else)."""
    return Upstream(
        name=CHATGPT,
        base_url=base_url.rstrip("/"),
        wire=Wire.RESPONSES,
        profile=Profile.CHATGPT,
        versioned=False,
    )


def normalize_base_url(url: str) -> str:
    """``https://api.openai.com/v1/`` and ``https://api.openai.com`` name the same base."""
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    return url


class Router:
    __slots__ = ("chatgpt", "upstreams")

    def __init__(self, upstreams: list[Upstream], chatgpt: Upstream | None = None) -> None:
        self.upstreams = upstreams
        self.chatgpt = chatgpt
        """The ChatGPT backend, for requests with a ChatGPT login (None: routed by model)."""

    def route(self, model: str, *, chatgpt: bool = False) -> Upstream | None:
        """The upstream for ``model``; for a Responses request with a ChatGPT login
        (``chatgpt``), the ChatGPT backend whatever the model."""
        if chatgpt and self.chatgpt is not None:
            return self.chatgpt
        for upstream in self.upstreams:
            if upstream.serves(model):
                return upstream
        return None

    def fallbacks(self, upstream: Upstream) -> list[Upstream]:
        """The upstreams ``upstream`` falls back to, in its order."""
        if not upstream.fallbacks:
            return []
        named = {candidate.name: candidate for candidate in self.upstreams}
        return [named[name] for name in upstream.fallbacks if name in named]
