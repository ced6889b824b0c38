"""Typed configuration: defaults < config file < ``SKILLSTATE_*`` environment < CLI flags.

``load_settings`` is the one place that reads the process environment (when it is called,
never at import). The config file is TOML with flat top-level keys and ``[[upstreams]]``
tables; its path comes from ``--config`` or ``SKILLSTATE_CONFIG``, else
``~/.config/skillstate/config.toml`` (``$XDG_CONFIG_HOME``) is read when it exists. Every
key is validated, and an unknown key, an unknown ``SKILLSTATE_*`` variable or a bad value
raises ``ConfigError`` naming the key and the source it came from.

Upstream base URLs are stored without a trailing ``/v1``; the gateway appends
``/v1/<route>``. API keys are ``SecretStr``: they are only ever shown masked. A config file::

    port = 8789
    mode = "hybrid"
    schema = ["step", "notes", "findings"]

    [[upstreams]]
    name = "openai"
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"      # the key itself stays in the environment
    models = ["gpt-*", "o*"]

    [[upstreams]]
    name = "anthropic"
    base_url = "https://api.anthropic.com"
    wire = "anthropic-messages"
    api_key_env = "ANTHROPIC_API_KEY"

    [collapse]                          # the collapse lane's options (state/options.py)
    keep_recent_turns = 6
    min_turns = 20

    [prices."gpt-4.1"]                  # USD per million tokens, over the price catalog
    input = 1.80                        # (economics/prices.py, docs/prices.md)

Or, for one provider, ``upstream = "https://api.openai.com/v1"`` with ``upstream_wire``,
``upstream_profile`` and ``SKILLSTATE_API_KEY`` instead of the tables (not both). An upstream's
``profile`` (``openai`` or ``compatible``) is detected from its base URL unless set
(docs/upstreams.md). From the environment or a flag,
``schema`` is a comma list and ``initial_state`` / ``upstreams`` / ``collapse`` / ``prices``
are JSON text (``SKILLSTATE_COLLAPSE='{"keep_recent_turns": 6}'``). A table is replaced whole
by a later source, never merged with it; its options are read by their owner
(``state.options.parse_options``, ``economics.prices.parse_overrides``), so an unknown option
is a ``ConfigError`` naming it and its source.
"""

from skillstate.config.display import describe, describe_json, mask_secret
from skillstate.config.errors import ConfigError
from skillstate.config.loader import load_settings
from skillstate.config.settings import KEYS, Settings
from skillstate.config.sources import default_data_dir
from skillstate.config.upstream_settings import UpstreamSettings, UpstreamWire
from skillstate.state.mode import Mode

__all__ = [
    "KEYS",
    "ConfigError",
    "Mode",
    "Settings",
    "UpstreamSettings",
    "UpstreamWire",
    "default_data_dir",
    "describe",
    "describe_json",
    "load_settings",
    "mask_secret",
]
