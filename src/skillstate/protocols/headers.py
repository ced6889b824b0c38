"""Which HTTP headers cross the gateway, per wire: credentials, versions, client metadata.

Rules:
* Hop-by-hop headers (RFC 9110 section 7.6.1), ``host``, ``content-length`` and
  ``accept-encoding`` never cross; the upstream client sets its own.
* Our own ``x-skillstate-*`` headers stay at the gateway.
* Credentials: with a configured key the client's credential headers are replaced by the
  upstream wire's (``Authorization: Bearer`` for OpenAI, ``x-api-key`` for Anthropic). Without
  one, the client's own credential is forwarded, moved to the upstream wire's header when the
  wires differ. On Anthropic the form follows the token (see ``credential_headers``): an
  OAuth access token goes as ``Authorization: Bearer``, an API key as ``x-api-key``, whichever
  header the client put it in. Nothing here stores or logs a key.
* The same wire forwards the client's other headers; across wires only neutral ones pass
  (``user-agent``, ``x-request-id``), since a wire's own headers mean nothing to another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.conversation import Wire

_NEVER = frozenset(
    {
        "host",
        "content-length",
        "accept-encoding",
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_CREDENTIALS = frozenset({"authorization", "x-api-key", "api-key"})
_NEUTRAL = frozenset({"user-agent", "x-request-id", "content-type", "accept"})
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_OAUTH_PREFIX = "sk-ant-oat"
"""How Anthropic's OAuth access tokens begin (``sk-ant-oat01-…``)."""
ANTHROPIC_KEY_PREFIX = "sk-ant-"
"""How Anthropic's API keys begin (``sk-ant-api03-…``); OAuth tokens are told apart first."""

#: Response headers relayed back to the client from the same wire.
_RESPONSE_NEVER = _NEVER | {"content-encoding", "date", "server"}


def client_credential(headers: Mapping[str, str]) -> str | None:
    """The key the client sent, from whichever header its wire uses."""
    value = _lower_get(headers, "authorization")
    if value:
        scheme, _, token = value.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else value
    return _lower_get(headers, "x-api-key") or _lower_get(headers, "api-key")


def credential_headers(
    wire: Wire,
    key: str,
    *,
    client: Mapping[str, str],
    client_wire: Wire | None = None,
) -> dict[str, str]:
    """The credential header that carries ``key`` to an upstream of ``wire``.

    OpenAI takes every key as ``Authorization: Bearer``. Anthropic takes API keys in
    ``x-api-key`` and OAuth access tokens (Claude Code's login) as ``Authorization: Bearer``,
    so there the token decides: ``sk-ant-oat…`` is an OAuth token, any other ``sk-ant-…`` an
    API key, wherever the client sent it (an OpenAI SDK always sends ``Authorization``). A
    token of neither form (an Anthropic-compatible provider's own) keeps the form an Anthropic
    client (``client_wire``) chose for it in ``client``; any other goes as ``x-api-key``.
    """
    bearer = {"authorization": f"Bearer {key}"}
    if wire is not Wire.MESSAGES or key.startswith(ANTHROPIC_OAUTH_PREFIX):
        return bearer
    if key.startswith(ANTHROPIC_KEY_PREFIX) or client_wire is not Wire.MESSAGES:
        return {"x-api-key": key}
    sent_as_bearer = client_credential(client) == key and not _lower_get(client, "x-api-key")
    return bearer if sent_as_bearer else {"x-api-key": key}


def upstream_headers(
    client: Mapping[str, str],
    *,
    client_wire: Wire,
    upstream_wire: Wire,
    api_key: str | None,
    extra: Iterable[tuple[str, str]] = (),
) -> dict[str, str]:
    """The headers to send upstream for a request that arrived with ``client`` headers."""
    same = client_wire is upstream_wire
    crossing = _SAME if same else _CROSSING
    out: dict[str, str] = {}
    for name, value in client.items():
        sent = crossing.get(name)
        if sent is None:
            sent = _crossing(name, same)
            if len(crossing) < _NAMES_KEPT:  # names are the clients' to choose: bounded
                crossing[name] = sent
        if sent:
            out[sent] = value
    key = api_key or client_credential(client)
    if key:
        out.update(credential_headers(upstream_wire, key, client=client, client_wire=client_wire))
    if upstream_wire is Wire.MESSAGES and "anthropic-version" not in out:
        out["anthropic-version"] = ANTHROPIC_VERSION
    out["content-type"] = "application/json"
    for name, value in extra:
        out[name.lower()] = value
    return out


_SAME: dict[str, str] = {}
_CROSSING: dict[str, str] = {}
"""A client header's name as it goes upstream ("": it does not), per name as sent, to an
upstream of the client's wire and of another: a client sends the same few on every request."""
_NAMES_KEPT = 1024


def _crossing(name: str, same: bool) -> str:
    lower = name.lower()
    if lower in _NEVER or lower in _CREDENTIALS or lower.startswith("x-skillstate-"):
        return ""
    return lower if same or lower in _NEUTRAL else ""


def response_headers(
    upstream: Mapping[str, str], *, upstream_wire: Wire, client_wire: Wire
) -> dict[str, str]:
    """The upstream's response headers fit for the client. The same wire relays them all but
    framing and hop-by-hop ones; across wires only what a client acts on crosses (the request
    id, ``retry-after``, rate limits), under the client wire's name where it has one, else
    under the upstream's own (a header a client does not know is harmless)."""
    out: dict[str, str] = {}
    same = upstream_wire is client_wire
    for name, value in upstream.items():
        lower = name.lower()
        if lower in _RESPONSE_NEVER or lower == "content-type":
            continue
        if same:
            out[name] = value
        elif lower in _PORTABLE or lower.startswith(_RATE_PREFIXES):
            out[_renamed(lower, client_wire)] = value
    return out


_PORTABLE = frozenset({"retry-after", "retry-after-ms", "request-id", "x-request-id"})
_RATE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")

#: (OpenAI name, Anthropic name) of the headers both families send, meaning the same. The
#: reset headers differ in form (OpenAI: a duration, Anthropic: a timestamp), so they keep
#: their own names.
_EQUIVALENT = (
    ("x-request-id", "request-id"),
    ("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"),
    ("x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"),
    ("x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"),
    ("x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"),
)
_TO_ANTHROPIC = dict(_EQUIVALENT)
_TO_OPENAI = {anthropic: openai for openai, anthropic in _EQUIVALENT}


def _renamed(lower: str, client_wire: Wire) -> str:
    names = _TO_ANTHROPIC if client_wire is Wire.MESSAGES else _TO_OPENAI
    return names.get(lower, lower)


_MULTIDICTS = (CIMultiDictProxy, CIMultiDict)


def _lower_get(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup that works on plain dicts and aiohttp's CIMultiDict alike."""
    value = headers.get(name)
    if value is not None or isinstance(headers, _MULTIDICTS):
        return value  # a multidict's own lookup ignores case already
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None
