"""Which profile an upstream gets when its table does not say: the wire's own provider's host
is official, any other host compatible (``upstream.profiles.detect``)."""

from __future__ import annotations

from typing import get_args

import pytest

from skillstate.config.upstream_settings import UpstreamProfile
from skillstate.conversation import Profile, Wire
from skillstate.upstream.profiles import detect

OFFICIAL, COMPATIBLE = Profile.OFFICIAL, Profile.COMPATIBLE


@pytest.mark.parametrize(
    ("base_url", "wire", "profile"),
    [
        ("https://api.openai.com", Wire.CHAT, OFFICIAL),
        ("https://API.OpenAI.com:443", Wire.RESPONSES, OFFICIAL),
        ("https://res-1.openai.azure.com/openai", Wire.CHAT, OFFICIAL),
        ("https://api.anthropic.com", Wire.MESSAGES, OFFICIAL),
        ("https://api.anthropic.com", None, OFFICIAL),
        ("https://api.openai.com", None, OFFICIAL),
        # another wire than the host's own provider speaks is not the provider's dialect
        ("https://api.openai.com", Wire.MESSAGES, COMPATIBLE),
        ("https://api.anthropic.com", Wire.CHAT, COMPATIBLE),
        # loopback and every other host: a generic server of the wire
        ("http://127.0.0.1:8080", Wire.CHAT, COMPATIBLE),
        ("http://localhost:11434", None, COMPATIBLE),
        ("http://[::1]:1234", Wire.CHAT, COMPATIBLE),
        ("https://openrouter.ai/api", Wire.CHAT, COMPATIBLE),
        ("https://api.openai.com.example.net", Wire.CHAT, COMPATIBLE),
        ("https://notopenai.azure.com", Wire.CHAT, COMPATIBLE),
    ],
)
def test_detect(base_url: str, wire: Wire | None, profile: Profile) -> None:
    assert detect(base_url, wire) is profile


def test_the_config_words_are_the_values() -> None:
    """Every profile a config may set; the ChatGPT backend's is chosen by a request's login,
    never configured."""
    assert [p.value for p in Profile] == ["openai", "compatible", "chatgpt"]
    assert get_args(UpstreamProfile) == ("auto", "openai", "compatible")
