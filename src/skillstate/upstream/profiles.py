"""Which profile an upstream has when its table does not say (pure): ``detect``.

``Profile.OFFICIAL`` (config word ``openai``) is the wire's own provider; ``Profile.COMPATIBLE``
is any other server of the wire (``conversation.Profile``). What the gateway does differently
for a compatible upstream: its bodies (``protocols.profiles.fit``), its refusals
(``protocols.profiles.refused_as_invalid``) and its first-byte timeouts, not tried again by
default (``server.forward``). docs/upstreams.md is the user's side.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from skillstate.conversation import Profile, Wire

OPENAI_HOSTS = ("api.openai.com",)
ANTHROPIC_HOSTS = ("api.anthropic.com",)
AZURE_OPENAI = ".openai.azure.com"
"""Azure OpenAI (``https://<resource>.openai.azure.com/openai/v1``) serves OpenAI's wires as
OpenAI does: its reasoning models refuse ``max_tokens``, which the compatible profile sends."""


def detect(base_url: str, wire: Wire | None) -> Profile:
    """The profile of an upstream at ``base_url`` speaking ``wire`` (None: the client's own):
    official on the wire's own provider's host (``api.openai.com`` or an Azure OpenAI
    resource for the OpenAI wires, ``api.anthropic.com`` for Anthropic's; either, when the
    wire is the client's), compatible on any other host, loopback included."""
    host = (urlsplit(base_url).hostname or "").lower()
    openai = host in OPENAI_HOSTS or host.endswith(AZURE_OPENAI)
    anthropic = host in ANTHROPIC_HOSTS
    if wire is Wire.MESSAGES:
        official = anthropic
    elif wire is None:
        official = openai or anthropic
    else:
        official = openai
    return Profile.OFFICIAL if official else Profile.COMPATIBLE
