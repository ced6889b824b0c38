"""The typed settings of one gateway process.

``Settings`` is built once by ``load_settings`` and never changes. Every field is a key that
the config file, the environment (``SKILLSTATE_<KEY>``) and the command line can set; nothing
else is accepted. Values that a file gives in TOML's own types must have the right type there
(``port = "8789"`` is an error); text from the environment or the command line is parsed first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    SecretStr,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from skillstate.config import values
from skillstate.config.telemetry import Telemetry, telemetry_of
from skillstate.config.upstream_settings import (
    UpstreamProfile,
    UpstreamSettings,
    UpstreamWire,
    checked_key,
)
from skillstate.economics.prices import (
    PriceOverrides,
    PricesError,
    builtin_catalog,
    parse_overrides,
)
from skillstate.pipeline.switches import LaneSwitches, parse_switches
from skillstate.state.mode import Mode
from skillstate.state.options import CollapseOptions, OptionsError, parse_options

if TYPE_CHECKING:
    from skillstate.storage.stores import StoreOptions

CONFLICT = "config_conflict"
"""Error type of a cross-key check; its context names the ``keys`` involved."""


OPTIONS = "config_options"
"""Error type of a table of options read by its owner's parser; its context holds the
``problems``, one per bad option, each naming the option."""


def _conflict(keys: tuple[str, ...], reason: str) -> PydanticCustomError:
    return PydanticCustomError(CONFLICT, "{reason}", {"reason": reason, "keys": keys})


def _collapse_options(value: object) -> CollapseOptions:
    """The ``collapse`` table, read by the collapse lane's own ``parse_options`` so that the
    lane's option names, types and bounds are defined in one place."""
    if isinstance(value, CollapseOptions):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("not a table (a JSON object)")
    try:
        return parse_options(value)
    except OptionsError as exc:
        context = {"reason": str(exc), "problems": exc.problems}
        raise PydanticCustomError(OPTIONS, "{reason}", context) from None


def _lane_switches(value: object) -> LaneSwitches:
    """The ``lanes`` tables, read by the pipeline's own ``parse_switches``."""
    if isinstance(value, LaneSwitches):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("not a table (a JSON object)")
    return parse_switches(value)


def _price_overrides(value: object) -> PriceOverrides:
    """The ``prices`` tables, read by the price catalog's own ``parse_overrides``, against the
    shipped catalog so that an added model without ``input`` or ``output`` is refused here
    rather than when the first exchange is priced."""
    if isinstance(value, PriceOverrides):
        return value
    if not isinstance(value, Mapping):
        raise ValueError("not a table (a JSON object)")
    try:
        return parse_overrides(value, builtin_catalog())
    except PricesError as exc:
        context = {"reason": str(exc), "problems": exc.problems}
        raise PydanticCustomError(OPTIONS, "{reason}", context) from None


LanesTable = Annotated[
    LaneSwitches,
    PlainValidator(_lane_switches),
    PlainSerializer(LaneSwitches.as_json, return_type=dict),
]

CollapseTable = Annotated[
    CollapseOptions, PlainValidator(_collapse_options), PlainSerializer(asdict, return_type=dict)
]

PricesTable = Annotated[
    PriceOverrides,
    PlainValidator(_price_overrides),
    PlainSerializer(PriceOverrides.as_json, return_type=dict),
]


MAX_WORKERS = 64
"""The most processes ``workers`` may start."""


class Settings(BaseModel):
    """Every setting of the gateway, validated. Build it with ``load_settings``.

    ``sources`` says where each key's value came from: ``default``, ``config file <path>``,
    ``environment SKILLSTATE_<KEY>`` or ``command line --<key>``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: StrictInt = 8789
    upstream: str | None = None
    upstream_wire: UpstreamWire = "auto"
    upstream_profile: UpstreamProfile = "auto"
    api_key: SecretStr | None = None
    upstreams: tuple[UpstreamSettings, ...] = ()
    # Where a Responses request with a ChatGPT login goes (Codex signed in with ChatGPT,
    # docs/integrations.md): that token is good only on the ChatGPT backend.
    chatgpt_base_url: str = "https://chatgpt.com/backend-api/codex"
    mode: Mode = Mode.HYBRID
    # Requests made with an Anthropic subscription login (Claude Code's Pro/Max) go through
    # untouched unless this is true: Anthropic allows that login for Claude Code and its own
    # apps only (docs/integrations.md, "A subscription login").
    subscription_rewrite: StrictBool = False
    # Named ``schema`` in every source; the attribute name avoids BaseModel.schema().
    state_schema: tuple[str, ...] | None = Field(default=None, alias="schema")
    initial_state: dict[str, Any] = Field(default_factory=dict)
    collapse: CollapseTable = Field(default_factory=CollapseOptions)
    lanes: LanesTable = Field(default_factory=LaneSwitches)
    # Corrections and additions to the price catalog, USD per million tokens (docs/prices.md).
    prices: PricesTable = Field(default_factory=PriceOverrides)
    data_dir: Path
    # Where sessions' Σ, the archive and the ledger are kept: empty for SQLite and files under
    # data_dir; a postgresql:// URL for one database several gateways share (the shared extra).
    store: str = ""
    # A Redis the gateways share (redis://...): rate limits over all of them (the shared extra).
    redis: str = ""
    verbose: StrictBool = False
    max_body_bytes: StrictInt = 32 * 1024 * 1024
    # Anthropic's documented limit of messages in one request; parts count every content
    # block, tool call and tool result of the request's messages and system prompt.
    max_messages: StrictInt = 100_000
    max_parts: StrictInt = 200_000
    # aiohttp's (and Apache's) defaults: the request line and each header's name and value,
    # and the number of headers in one request.
    max_header_line_bytes: StrictInt = 8190
    max_headers: StrictInt = 128
    # Σ and one patch of it, in bytes of compact JSON (state/schema.py's bounds).
    max_state_bytes: StrictInt = 64 * 1024
    max_patch_bytes: StrictInt = 16 * 1024
    upstream_timeout: StrictFloat = 600.0
    connect_timeout: StrictFloat = 10.0
    first_byte_timeout: StrictFloat = 300.0
    stream_idle_timeout: StrictFloat = 120.0
    retries: StrictInt = 2
    retry_max_wait: StrictFloat = 8.0
    retry_deadline: StrictFloat = 600.0
    # The circuit breaker per upstream (docs/resilience.md): it opens when at least
    # circuit_failure_rate of at least circuit_min_requests calls in the last
    # circuit_window_seconds failed, stays open circuit_open_seconds, then lets circuit_trials
    # calls through as trials. Open, it reroutes to a healthy fallback, never refuses alone.
    # Closed, an upstream that failed circuit_reroute_rate of its tries (of at least
    # circuit_min_requests) is passed over for a healthy fallback, when it has one.
    circuit_failure_rate: StrictFloat = 0.5
    circuit_reroute_rate: StrictFloat = 0.1
    circuit_min_requests: StrictInt = 20
    circuit_window_seconds: StrictFloat = 30.0
    circuit_open_seconds: StrictFloat = 30.0
    circuit_trials: StrictInt = 3
    shutdown_timeout: StrictFloat = 10.0
    # The ledger (docs/cost.md): rows older than this many days are removed.
    ledger_retention_days: StrictFloat = 30.0
    # Virtual keys' budgets (SECURITY.md): a model the price catalog does not list counts
    # against a budget at these prices, USD per million input tokens (cached and written
    # alike) and output tokens, never as free; a request that sets no output limit of its
    # own holds this many output tokens of its key's budget while in flight.
    budget_fallback_input_price: StrictFloat = 15.0
    budget_fallback_output_price: StrictFloat = 75.0
    budget_output_tokens: StrictInt = 16_384
    # A tenant's own provider keys (SECURITY.md): TENANT=VAR or TENANT@UPSTREAM=VAR, each the
    # environment variable holding the key its virtual keys' requests go upstream with (to
    # every upstream, or to the one named) instead of the gateway's.
    tenant_api_keys: tuple[str, ...] = ()
    # The archive (docs/archive.md): a span unused (not written, not read) this many days
    # expires; past this many MiB of blob files, the least recently used are evicted.
    archive_ttl_days: StrictFloat = 7.0
    archive_max_mb: StrictInt = 500
    # Who may reach the gateway, and for how long a client may hold a connection open
    # (SECURITY.md): a token every route checks (required off loopback), the Host names and
    # browser origins allowed besides the gateway's own, the time to send a request head and
    # a body, and how many connections are held at once.
    auth_token: SecretStr | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    header_timeout: StrictFloat = 10.0
    body_timeout: StrictFloat = 60.0
    max_connections: StrictInt = 256
    # Processes serving one port (SO_REUSEPORT), restarted when one dies (docs/shared-store.md).
    workers: StrictInt = 1
    # Encryption at rest (SECURITY.md): Σ, documents, archived spans and their summaries are
    # sealed with AES-GCM under the first key of a file only its owner may read, or of
    # SKILLSTATE_DATA_KEY (the environment only); neither set, nothing is sealed.
    data_key_file: Path | None = None
    data_key: SecretStr | None = None

    # OpenTelemetry (docs/observability.md): the OTLP/HTTP endpoint traces and metrics go to
    # (http://127.0.0.1:4318); empty: as the OTEL_* variables say, off without them.
    otel_endpoint: str = ""

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _tenant_keys: dict[tuple[str, str | None], str] = PrivateAttr(default_factory=dict)
    _telemetry: Telemetry | None = PrivateAttr(default=None)

    @field_validator("host")
    @classmethod
    def _host(cls, host: str) -> str:
        return values.check_host(host)

    @field_validator("store")
    @classmethod
    def _store(cls, url: str) -> str:
        return values.check_store(url)

    @field_validator("redis")
    @classmethod
    def _redis(cls, url: str) -> str:
        return values.check_redis(url)

    @field_validator("port")
    @classmethod
    def _port(cls, port: int) -> int:
        return values.check_port(port)

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, url: str | None) -> str | None:
        return None if url is None else values.normalize_base_url(url)

    @field_validator("otel_endpoint")
    @classmethod
    def _otel_endpoint(cls, url: str) -> str:
        return url and values.check_endpoint(url)

    @field_validator("chatgpt_base_url")
    @classmethod
    def _chatgpt_base_url(cls, url: str) -> str:
        return values.normalize_base_url(url)

    @field_validator("api_key")
    @classmethod
    def _api_key(cls, key: SecretStr | None) -> SecretStr | None:
        return checked_key(key)

    @field_validator("state_schema")
    @classmethod
    def _schema(cls, keys: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if keys is None else values.check_schema(keys)

    @field_validator("initial_state")
    @classmethod
    def _initial_state(cls, state: dict[str, Any]) -> dict[str, Any]:
        # Against max_state_bytes in _coherent, once that key is known.
        return values.check_state_object(state, values.STATE_BYTES_CEILING)

    @field_validator("max_state_bytes", "max_patch_bytes")
    @classmethod
    def _state_limit(cls, size: int) -> int:
        if not 0 < size <= values.STATE_BYTES_CEILING:
            raise ValueError(f"must be from 1 to {values.STATE_BYTES_CEILING}")
        return size

    @field_validator(
        "max_body_bytes",
        "max_messages",
        "max_parts",
        "max_header_line_bytes",
        "max_headers",
        "circuit_min_requests",
        "circuit_trials",
        "archive_max_mb",
    )
    @classmethod
    def _limit(cls, size: int) -> int:
        return int(values.check_positive(size))

    @field_validator("retries")
    @classmethod
    def _retries(cls, retries: int) -> int:
        if not 0 <= retries <= 10:
            raise ValueError("must be from 0 to 10 (tries after the first)")
        return retries

    @field_validator(
        "upstream_timeout",
        "connect_timeout",
        "first_byte_timeout",
        "stream_idle_timeout",
        "retry_max_wait",
        "retry_deadline",
        "circuit_window_seconds",
        "circuit_open_seconds",
        "shutdown_timeout",
        "ledger_retention_days",
        "archive_ttl_days",
        "budget_fallback_input_price",
        "budget_fallback_output_price",
    )
    @classmethod
    def _timeout(cls, seconds: float) -> float:
        return values.check_positive(seconds)

    @field_validator("budget_output_tokens")
    @classmethod
    def _budget_output_tokens(cls, tokens: int) -> int:
        if tokens < 1:
            raise ValueError("must be 1 or more")
        return tokens

    @field_validator("circuit_failure_rate", "circuit_reroute_rate")
    @classmethod
    def _failure_rate(cls, rate: float) -> float:
        if not 0 < rate <= 1:
            raise ValueError("must be above 0 and at most 1 (a share of the calls)")
        return rate

    @field_validator("auth_token")
    @classmethod
    def _auth_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None:
            values.check_token(token.get_secret_value())
        return token

    @field_validator("tenant_api_keys")
    @classmethod
    def _tenant_api_keys(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            values.tenant_key_entry(entry)
        return entries

    def tenant_key(self, tenant: str, upstream: str) -> str | None:
        """The provider key ``tenant``'s requests go to ``upstream`` with (``tenant_api_keys``,
        read from the environment when the settings loaded), or None: the gateway's."""
        keys = self._tenant_keys
        return keys.get((tenant, upstream)) or keys.get((tenant, None)) if keys else None

    @field_validator("data_key")
    @classmethod
    def _data_key(cls, key: SecretStr | None) -> SecretStr | None:
        if key is not None:
            from skillstate.storage.data_key import keys_of

            keys_of(key.get_secret_value(), "SKILLSTATE_DATA_KEY")
        return key

    def store_options(self) -> StoreOptions:
        """How the stores are opened: the archive's bounds, and the data key's sealer (None
        with encryption off). ``DataKeyError`` for a key file that is missing, open to
        others or malformed."""
        from skillstate.storage.data_key import sealer_for
        from skillstate.storage.stores import StoreOptions

        key = None if self.data_key is None else self.data_key.get_secret_value()
        sealer = sealer_for(self.data_key_file, key)
        return StoreOptions.of_archive(self.archive_ttl_days, self.archive_max_mb, sealer)

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        return values.check_allowed_hosts(hosts)

    @field_validator("allowed_origins")
    @classmethod
    def _allowed_origins(cls, origins: tuple[str, ...]) -> tuple[str, ...]:
        return values.check_allowed_origins(origins)

    @field_validator("header_timeout", "body_timeout")
    @classmethod
    def _read_timeout(cls, seconds: float) -> float:
        return values.check_positive(seconds)

    @field_validator("max_connections")
    @classmethod
    def _max_connections(cls, count: int) -> int:
        return int(values.check_positive(count))

    @field_validator("workers")
    @classmethod
    def _workers(cls, count: int) -> int:
        if not 1 <= count <= MAX_WORKERS:
            raise ValueError(f"must be 1 to {MAX_WORKERS}, not {count}")
        return count

    @field_validator("upstreams")
    @classmethod
    def _unique_names(cls, upstreams: tuple[UpstreamSettings, ...]) -> tuple[UpstreamSettings, ...]:
        names = [upstream.name for upstream in upstreams]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"upstream name {', '.join(map(repr, duplicates))} is used twice")
        return upstreams

    @model_validator(mode="after")
    def _coherent(self) -> Settings:
        """Keys that only make sense together, checked on the values that were set."""
        given = self.model_fields_set
        if self.upstreams and self.upstream is not None:
            raise _conflict(
                ("upstream", "upstreams"),
                "cannot both be set; upstream is the one-provider shortcut of upstreams",
            )
        for key in ("upstream_wire", "upstream_profile", "api_key"):
            if self.upstreams and key in given:
                raise _conflict(
                    (key, "upstreams"),
                    f"{key} applies only to the upstream shortcut; "
                    "give each upstream its own wire, profile and api_key_env",
                )
        names = {upstream.name for upstream in self.upstreams}
        for upstream in self.upstreams:
            unknown = [name for name in upstream.fallbacks if name not in names]
            if unknown or upstream.name in upstream.fallbacks:
                raise _conflict(
                    ("upstreams",),
                    f"upstream {upstream.name!r} falls back to "
                    f"{', '.join(map(repr, unknown or [upstream.name]))}: "
                    "fallbacks must name other configured upstreams",
                )
        self._check_state_sizes()
        if self.state_schema is not None:
            named = {values.schema_key(key) for key in self.state_schema}
            outside = sorted(set(self.initial_state) - named)
            if outside:
                raise _conflict(
                    ("initial_state", "schema"),
                    f"initial_state has keys outside the schema: {', '.join(map(repr, outside))}",
                )
        return self

    def _check_state_sizes(self) -> None:
        if self.max_patch_bytes > self.max_state_bytes:
            raise _conflict(
                ("max_patch_bytes", "max_state_bytes"),
                "a patch may not be larger than the state it patches",
            )
        try:
            values.check_state_object(self.initial_state, self.max_state_bytes)
        except ValueError as exc:
            raise _conflict(("initial_state", "max_state_bytes"), f"initial_state {exc}") from None

    @property
    def sources(self) -> dict[str, str]:
        """Where each key's value came from, by key (``schema``, not ``state_schema``); also
        ``collapse.<option>`` for each option the ``collapse`` table gave (a later source
        replaces the whole table, so the others are the defaults)."""
        return dict(self._sources)

    @property
    def telemetry(self) -> Telemetry:
        """Where traces and metrics go (``config.telemetry``): as ``load_settings`` read it
        with the environment, else from ``otel_endpoint`` alone."""
        if self._telemetry is None:
            return telemetry_of(self.otel_endpoint, {})
        return self._telemetry

    def resolved_upstreams(self) -> list[UpstreamSettings]:
        """The upstreams to route to, in order; the shortcut becomes one named ``default``."""
        if self.upstream is None:
            return list(self.upstreams)
        shortcut = UpstreamSettings(
            name="default",
            base_url=self.upstream,
            wire=self.upstream_wire,
            profile=self.upstream_profile,
            models=("*",),
        )
        return [shortcut.model_copy(update={"api_key": self.api_key})]


KEYS: tuple[str, ...] = tuple(field.alias or name for name, field in Settings.model_fields.items())
"""Every key a source may set, in the order ``describe`` shows them."""

ATTRIBUTES: dict[str, str] = {
    field.alias or name: name for name, field in Settings.model_fields.items()
}
"""Key -> attribute name on ``Settings`` (they differ only for ``schema``)."""
