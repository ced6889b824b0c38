"""Checks and normalisations for single configuration values.

Each function takes a value as written and returns it normalised, or raises ``ValueError``
whose text reads well after ``key=value from source: `` in a ``ConfigError``.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from skillstate.state.schema import RESERVED_KEYS, SchemaError, StateSchema
from skillstate.storage.keys import TENANT_RULE, valid_tenant
from skillstate.support import jsonio
from skillstate.support.urls import shown_url

MAX_SCHEMA_KEYS = 64
MAX_SCHEMA_KEY_LENGTH = 64
MAX_STATE_DEPTH = 16
MAX_STATE_BYTES = 64 * 1024
STATE_BYTES_CEILING = 1024 * 1024
"""The most ``max_state_bytes`` may allow: Σ travels on every request, and the store keeps a
state and its meta in at most 8 MiB."""


# Headers the gateway's HTTP client computes itself; a configured value would corrupt framing.
MANAGED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te"}
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UPSTREAM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\Z){_LABEL}(?:\.{_LABEL})*\.?\Z")
# RFC 9110 §5.6.2: a field name is a token.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")


def normalize_base_url(url: str) -> str:
    """Return the provider's base URL without a trailing ``/`` or ``/v1``.

    The gateway appends ``/v1/<route>`` (``/v1/chat/completions``, ``/v1/responses``,
    ``/v1/messages``) to this base, so ``https://api.openai.com/v1`` and
    ``https://api.anthropic.com`` are both written the way each provider documents them.
    Credentials in the URL are refused: they would be printed wherever the URL is shown.
    """
    if not url or any(char.isspace() for char in url):
        raise ValueError("not a URL (empty or contains whitespace)")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("not an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("has no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold credentials; set the API key separately")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError:
        raise ValueError("has an invalid port") from None
    if parts.query or parts.fragment:
        raise ValueError("must not have a query or a fragment")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")].rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, "", ""))


def check_host(host: str) -> str:
    """An IP address (``::1`` without brackets) or a DNS name, as the listener takes it."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME.match(host):
            raise ValueError(
                "not an IP address or host name (write it without scheme or port)"
            ) from None
    return host


STORE_SCHEMES = ("postgresql://", "postgres://")
"""The URLs a ``store`` may be besides empty (SQLite under the data directory)."""


def check_store(url: str) -> str:
    """Empty (SQLite and files under ``data_dir``) or a PostgreSQL URL."""
    if url and not url.startswith(STORE_SCHEMES):
        raise ValueError(
            f"must be empty (SQLite under data_dir) or a postgresql:// URL, not {shown_url(url)!r}"
        )
    return url


def check_endpoint(url: str) -> str:
    """An http:// or https:// URL of a collector, without a trailing ``/``; credentials in
    it are refused (they go in ``OTEL_EXPORTER_OTLP_HEADERS``)."""
    if any(char.isspace() for char in url):
        raise ValueError("not a URL (contains whitespace)")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"must be empty or an http:// or https:// URL, not {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not hold credentials: put them in OTEL_EXPORTER_OTLP_HEADERS")
    return url.rstrip("/")


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def check_redis(url: str) -> str:
    """Empty (nothing shared) or a Redis URL."""
    if url and not url.startswith(REDIS_SCHEMES):
        raise ValueError(f"must be empty or a redis:// URL, not {shown_url(url)!r}")
    return url


def check_port(port: int) -> int:
    if not 1 <= port <= 65535:
        raise ValueError("must be between 1 and 65535")
    return port


def check_positive(number: float) -> float:
    if not math.isfinite(number) or number <= 0:
        raise ValueError("must be greater than 0")
    return number


def check_schema(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Σ's top-level keys: identifiers, unique, at most 64 of them, each at most 64 long, each
    with the rule its patches combine by after a colon where it names one (``count:sum``:
    ``state.schema.Rule``), a rule that combines the key's declared type."""
    if not keys:
        raise ValueError("must name at least one key")
    if len(keys) > MAX_SCHEMA_KEYS:
        raise ValueError(f"has {len(keys)} keys; at most {MAX_SCHEMA_KEYS} are allowed")
    try:
        StateSchema.from_keys(keys)
    except SchemaError as exc:
        if ":" in "".join(keys):
            raise ValueError(str(exc)) from None
    keys_only = tuple(schema_key(key) for key in keys)
    for key in keys_only:
        if not _IDENTIFIER.match(key) or len(key) > MAX_SCHEMA_KEY_LENGTH:
            raise ValueError(
                f"{key!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*, "
                f"at most {MAX_SCHEMA_KEY_LENGTH} characters)"
            )
        if key in RESERVED_KEYS:
            raise ValueError(f"{key!r} is a reserved name")
    duplicates = sorted({key for key in keys_only if keys_only.count(key) > 1})
    if duplicates:
        raise ValueError(f"names {', '.join(map(repr, duplicates))} more than once")
    return keys


def schema_key(entry: str) -> str:
    """A schema entry's key, without the rule it may name (``count:sum`` -> ``count``)."""
    return entry.partition(":")[0]


def check_state_object(state: dict[str, Any], limit: int = MAX_STATE_BYTES) -> dict[str, Any]:
    """A JSON object Σ can start from: JSON values only, no reserved keys, at most ``limit``
    bytes as compact JSON."""
    _check_json(state, "", 1)
    size = len(jsonio.dumps(state))
    if size > limit:
        raise ValueError(f"is {size} bytes as JSON; at most {limit} are allowed")
    return state


def _check_json(value: object, where: str, depth: int) -> None:
    if depth > MAX_STATE_DEPTH:
        raise ValueError(f"nests deeper than {MAX_STATE_DEPTH} levels at {where or 'the top'}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"has a non-string key {key!r} at {where or 'the top'}")
            if key in RESERVED_KEYS:
                raise ValueError(f"has the reserved key {key!r} at {where or 'the top'}")
            _check_json(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"holds {value!r} at {where}, which JSON cannot carry")
    elif value is not None and not isinstance(value, str | int | float | bool):
        kind = type(value).__name__
        raise ValueError(f"holds a {kind} at {where}, which JSON cannot carry")


def check_upstream_name(name: str) -> str:
    if not _UPSTREAM_NAME.match(name):
        raise ValueError("must be 1 to 64 letters, digits, '_', '.' or '-', starting alphanumeric")
    return name


def check_env_name(name: str) -> str:
    if not _ENV_NAME.match(name):
        raise ValueError("not an environment variable name")
    return name


def check_api_key(key: str) -> str:
    """A key travels in an HTTP header, so whitespace and control characters are refused."""
    if not key:
        raise ValueError("is empty")
    if any(char.isspace() or not char.isprintable() for char in key):
        raise ValueError("contains whitespace or control characters")
    return key


MIN_TOKEN_LENGTH = 16
ANY = "*"
"""In ``allowed_hosts`` or ``allowed_origins``: every value is allowed."""


def check_token(token: str) -> str:
    """The gateway's own access token: it travels in a header, and it stands between the
    network and every route, so it must not be short enough to guess."""
    check_api_key(token)
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(
            f"is {len(token)} characters; at least {MIN_TOKEN_LENGTH} are required "
            "(`python -c 'import secrets; print(secrets.token_urlsafe(32))'` makes one)"
        )
    return token


def tenant_key_entry(entry: str) -> tuple[str, str | None, str]:
    """``TENANT=VAR`` or ``TENANT@UPSTREAM=VAR`` (``tenant_api_keys``) as (tenant, upstream or
    None, variable); ``ValueError`` saying what is wrong."""
    named, equals, variable = entry.partition("=")
    tenant, at, upstream = named.strip().partition("@")
    if not equals or not valid_tenant(tenant) or (at and not upstream):
        raise ValueError(
            f"{entry!r} is not TENANT=VAR or TENANT@UPSTREAM=VAR (a tenant is {TENANT_RULE})"
        )
    return tenant, upstream or None, check_env_name(variable.strip())


def check_allowed_hosts(hosts: tuple[str, ...]) -> tuple[str, ...]:
    """Names a request's ``Host`` may carry besides the loopback names and the bound address:
    host names or IP addresses without a port (``gw.lan``, ``192.168.1.5``, ``::1``), or
    ``*`` for any. Stored lowercase, without brackets or a final dot."""
    checked: list[str] = []
    for host in hosts:
        if host == ANY:
            checked.append(host)
            continue
        bare = host.removeprefix("[").removesuffix("]") if host.startswith("[") else host
        try:
            check_host(bare)
        except ValueError:
            raise ValueError(
                f"{host!r} is not a host name or IP address (write it without scheme or port)"
            ) from None
        checked.append(bare.rstrip(".").lower())
    return tuple(checked)


def check_allowed_origins(origins: tuple[str, ...]) -> tuple[str, ...]:
    """Browser origins allowed to call the gateway: ``scheme://host[:port]`` exactly as a
    browser sends it in ``Origin`` (no path, no trailing ``/``), or ``*`` for any. Stored
    lowercase."""
    checked: list[str] = []
    for origin in origins:
        if origin == ANY:
            checked.append(origin)
            continue
        parts = urlsplit(origin)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if (
            parts.scheme.lower() not in ("http", "https")
            or not parts.hostname
            or parts.path
            or parts.query
            or parts.fragment
            or parts.username is not None
            or port == -1
        ):
            raise ValueError(
                f"{origin!r} is not an origin (scheme://host[:port], as a browser sends it)"
            )
        checked.append(origin.lower())
    return tuple(checked)


def check_models(patterns: tuple[str, ...]) -> tuple[str, ...]:
    if not patterns:
        raise ValueError("must hold at least one pattern (use '*' for every model)")
    if any(not pattern for pattern in patterns):
        raise ValueError("holds an empty pattern")
    return patterns


def check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Extra request headers for one upstream; names are tokens, values single-line."""
    seen: set[str] = set()
    for name, value in headers.items():
        if not _TOKEN.match(name):
            raise ValueError(f"header name {name!r} is not an HTTP token (RFC 9110 §5.6.2)")
        lowered = name.lower()
        if lowered in MANAGED_HEADERS:
            raise ValueError(f"header {name!r} is set by the gateway itself")
        if lowered in seen:
            raise ValueError(f"header {name!r} is given twice")
        seen.add(lowered)
        if any(char in value for char in "\r\n\0"):
            raise ValueError(f"header {name!r} has a line break or NUL in its value")
    return dict(headers)
