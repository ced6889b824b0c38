"""Who is calling: the kind of credential a request carries, told from its headers alone.

Four kinds matter to what the gateway may do with a request:

* ``api-key``: a provider API key the client sent (``sk-…``, ``sk-ant-api…``, or any other
  bearer or ``x-api-key`` value that is not one of the logins below): billed per token, the
  gateway's to rewrite as configured.
* ``gateway-key``: the client sent none of its own (or the gateway replaces it): the key the
  gateway holds is used (``SKILLSTATE_API_KEY`` or an upstream's ``api_key_env``).
* ``anthropic-subscription``: Claude Code's Pro/Max login, an Anthropic OAuth access token
  (``sk-ant-oat…``) as ``Authorization: Bearer``. Anthropic allows it for Claude Code and its
  own apps; a rewrite of such a request is the user's explicit choice, never the default.
* ``chatgpt``: Codex's ChatGPT login, a JWT access token as ``Authorization: Bearer`` with a
  ``ChatGPT-Account-ID`` header; served by the ChatGPT backend, not by the public API.

``none``: no credential at all (a local server that wants none).

Nothing here keeps, logs or returns a token: only its kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from skillstate.protocols.headers import ANTHROPIC_OAUTH_PREFIX, client_credential

CHATGPT_ACCOUNT_HEADER = "chatgpt-account-id"
"""The header Codex sends beside a ChatGPT login's access token."""


class Login(StrEnum):
    """The kind of credential a request carries (``login_of``)."""

    NONE = "none"
    API_KEY = "api-key"
    GATEWAY_KEY = "gateway-key"
    ANTHROPIC_SUBSCRIPTION = "anthropic-subscription"
    CHATGPT = "chatgpt"

    @property
    def subscription(self) -> bool:
        """A login billed by a subscription, not per token."""
        return self in (Login.ANTHROPIC_SUBSCRIPTION, Login.CHATGPT)


def login_of(headers: Mapping[str, str], *, gateway_key: bool = False) -> Login:
    """The kind of credential in ``headers`` (any mapping; names in any case).

    A subscription login is told first and stays one even where the gateway holds a key: the
    gateway's key is used only for a request that brought no login of its own
    (``gateway_key``: the gateway holds one for this request's upstream)."""
    token = client_credential(headers)
    if token and token.startswith(ANTHROPIC_OAUTH_PREFIX) and _bearer(headers):
        return Login.ANTHROPIC_SUBSCRIPTION
    if (
        token
        and _bearer(headers)
        and _looks_like_jwt(token)
        and _has(headers, CHATGPT_ACCOUNT_HEADER)
    ):
        return Login.CHATGPT
    if gateway_key:
        return Login.GATEWAY_KEY
    return Login.API_KEY if token else Login.NONE


def _bearer(headers: Mapping[str, str]) -> bool:
    for name, value in headers.items():
        if name.lower() == "authorization":
            return value[:7].lower() == "bearer "
    return False


def _has(headers: Mapping[str, str], name: str) -> bool:
    return any(key.lower() == name and value.strip() for key, value in headers.items())


def _looks_like_jwt(token: str) -> bool:
    """Three dot-separated base64url parts, the first a JSON header (``eyJ``)."""
    parts = token.split(".")
    return len(parts) == 3 and token.startswith("eyJ") and all(parts)
