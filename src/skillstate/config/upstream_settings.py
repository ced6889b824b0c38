"""One ``[[upstreams]]`` table of the settings: a provider the gateway forwards to."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StrictBool,
    StrictInt,
    field_validator,
)

from skillstate.config import values
from skillstate.conversation.model import Profile, Wire
from skillstate.upstream.profiles import detect

UpstreamWire = Literal["auto", "openai-chat", "openai-responses", "anthropic-messages"]
"""``auto`` forwards in the client's own wire; the others are the ``Wire`` values."""

UpstreamProfile = Literal["auto", "openai", "compatible"]
"""``auto`` detects the profile from the base URL (``upstream.profiles.detect``); the others
are the ``Profile`` values (docs/upstreams.md)."""


class UpstreamSettings(BaseModel):
    """One provider the gateway forwards to.

    ``base_url`` is stored without a trailing ``/v1``: the gateway appends ``/v1/<route>``.
    ``api_key`` is read from the environment variable named by ``api_key_env`` when settings
    load, and lives only in memory.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    base_url: str
    wire: UpstreamWire = "auto"
    api_key_env: str | None = None
    models: tuple[str, ...] = ("*",)
    headers: dict[str, str] = Field(default_factory=dict)
    fallbacks: tuple[str, ...] = ()
    """Other upstreams (by name, in order) that serve this one's requests when its circuit
    is open or its retries are spent."""
    rpm: StrictInt | None = None
    """Requests per minute the gateway sends this upstream at most (rolling window)."""
    tpm: StrictInt | None = None
    """Prompt tokens per minute (estimated from the body) sent this upstream at most."""
    profile: UpstreamProfile = "auto"
    """The dialect of its wire it speaks: ``openai`` (the wire's own provider) or
    ``compatible`` (llama.cpp, vLLM, Ollama...); ``auto`` detects it from the base URL."""
    retry_first_byte_timeout: StrictBool | None = None
    """Whether a call whose first byte did not come in time is tried again; None: on the
    ``openai`` profile only (a compatible server may still be running the request)."""
    api_key: SecretStr | None = Field(default=None, exclude=True)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return values.check_upstream_name(name)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, url: str) -> str:
        return values.normalize_base_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, name: str | None) -> str | None:
        return None if name is None else values.check_env_name(name)

    @field_validator("models")
    @classmethod
    def _models(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        return values.check_models(patterns)

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return values.check_headers(headers)

    @field_validator("rpm", "tpm")
    @classmethod
    def _per_minute(cls, limit: int | None) -> int | None:
        return None if limit is None else int(values.check_positive(limit))

    @field_validator("api_key")
    @classmethod
    def _api_key(cls, key: SecretStr | None) -> SecretStr | None:
        return checked_key(key)

    @property
    def forced_wire(self) -> Wire | None:
        """The wire every request to this upstream is sent in, or None to keep the client's."""
        return None if self.wire == "auto" else Wire(self.wire)

    @property
    def resolved_profile(self) -> Profile:
        """The profile in use: the one set, else the one its base URL and wire say."""
        if self.profile == "auto":
            return detect(self.base_url, self.forced_wire)
        return Profile(self.profile)

    @property
    def retries_first_byte_timeout(self) -> bool:
        """Whether a first-byte timeout is tried again: as set, else on ``openai`` only."""
        if self.retry_first_byte_timeout is not None:
            return self.retry_first_byte_timeout
        return self.resolved_profile is Profile.OFFICIAL

    def matches(self, model: str) -> bool:
        """Whether a model name matches one of ``models`` (case-sensitive shell globs)."""
        return any(fnmatchcase(model, pattern) for pattern in self.models)


def checked_key(key: SecretStr | None) -> SecretStr | None:
    if key is not None:
        values.check_api_key(key.get_secret_value())
    return key
