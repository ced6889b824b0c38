"""The effective configuration as ``skillstate config`` shows it, secrets masked.

Keys are never shown whole: a long key keeps its kind prefix and last four characters
(``sk-…abcd``), a short one only says ``(set)``. Header values are not shown at all, since
providers take credentials in headers too.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from pydantic import SecretStr

from skillstate.config.settings import ATTRIBUTES, KEYS, Settings
from skillstate.config.upstream_settings import UpstreamSettings
from skillstate.economics.prices import PriceOverrides
from skillstate.pipeline.switches import LaneSwitches
from skillstate.state.options import CollapseOptions
from skillstate.support import jsonio
from skillstate.support.urls import shown_url

_NOT_SET = "(not set)"
_MIN_REVEALING_LENGTH = 16
_MAX_PREFIX = 8


def mask_secret(secret: SecretStr | str) -> str:
    """``sk-proj-…`` -> ``sk-…abcd``; keys under 16 characters show nothing but ``(set)``."""
    value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    if len(value) < _MIN_REVEALING_LENGTH:
        return "(set)"
    dash = value.find("-")
    prefix = value[: dash + 1] if 0 < dash < _MAX_PREFIX else ""
    return f"{prefix}…{value[-4:]}"


def describe(settings: Settings) -> list[tuple[str, str, str]]:
    """``(key, value as text, source)`` for every key; one row per configured upstream, one
    per collapse option (``collapse.<option>``), one per lane (``lanes.<lane>``) and one per
    priced model (``prices.<model>``)."""
    rows: list[tuple[str, str, str]] = []
    for key in KEYS:
        source = settings.sources.get(key, "default")
        value = getattr(settings, ATTRIBUTES[key])
        if key == "collapse":
            rows.extend(_option_rows(settings))
        elif key == "upstreams" and settings.upstreams:
            rows.extend(
                (f"upstreams[{index}]", _upstream_text(upstream), source)
                for index, upstream in enumerate(settings.upstreams)
            )
        elif key == "lanes":
            rows.extend((name, text, source) for name, text in settings.lanes.rows())
        elif key == "prices":
            shown = _price_rows(settings.prices) or [("prices", "(none)")]
            rows.extend((name, text, source) for name, text in shown)
        elif key == "upstream_profile":
            rows.append((key, _shortcut_profile(settings), source))
        elif key == "store":
            rows.append((key, shown_url(settings.store) or "(SQLite under data_dir)", source))
        elif key == "redis":
            rows.append((key, shown_url(settings.redis) or "(none)", source))
        else:
            rows.append((key, _text(value), source))
    return rows


def _price_rows(overrides: PriceOverrides) -> list[tuple[str, str]]:
    return [
        (
            f"prices.{name}",
            " ".join(f"{rate}={amount}" for rate, amount in override.given().items()),
        )
        for name, override in overrides.models.items()
    ]


def _shortcut_profile(settings: Settings) -> str:
    """The shortcut's profile, with the one detected when it is ``auto``."""
    shortcut = settings.resolved_upstreams() if settings.upstream is not None else []
    if settings.upstream_profile != "auto" or not shortcut:
        return settings.upstream_profile
    return f"auto ({shortcut[0].resolved_profile})"


def _option_rows(settings: Settings) -> list[tuple[str, str, str]]:
    """One row per collapse option: each comes from the table's source when the table named
    it, else from the defaults."""
    rows = []
    for option in fields(settings.collapse):
        key = f"collapse.{option.name}"
        value = _text(getattr(settings.collapse, option.name))
        rows.append((key, value, settings.sources.get(key, "default")))
    return rows


def describe_json(settings: Settings) -> dict[str, dict[str, object]]:
    """``{key: {"value": ..., "source": ...}}`` with JSON values, secrets masked."""
    report: dict[str, dict[str, object]] = {}
    for key in KEYS:
        value = getattr(settings, ATTRIBUTES[key])
        shown = [_upstream_json(item) for item in value] if key == "upstreams" else _json(value)
        if key in ("store", "redis"):
            shown = shown_url(getattr(settings, key))
        report[key] = {"value": shown, "source": settings.sources.get(key, "default")}
    return report


def _text(value: object) -> str:
    if value is None:
        return _NOT_SET
    if isinstance(value, SecretStr):
        return mask_secret(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(map(str, value)) if value else "(none)"
    if isinstance(value, dict):
        return jsonio.dumps_str(value)
    return str(value)


def _json(value: object) -> object:
    if isinstance(value, CollapseOptions):
        return asdict(value)
    if isinstance(value, LaneSwitches | PriceOverrides):
        return value.as_json()
    if isinstance(value, SecretStr):
        return mask_secret(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _upstream_text(upstream: UpstreamSettings) -> str:
    parts = [
        f"name={upstream.name}",
        f"base_url={upstream.base_url}",
        f"wire={upstream.wire}",
        f"models={','.join(upstream.models)}",
        f"profile={_profile_text(upstream)}",
    ]
    if upstream.api_key_env is not None:
        parts.append(f"api_key_env={upstream.api_key_env}")
    if upstream.api_key is not None:
        parts.append(f"api_key={mask_secret(upstream.api_key)}")
    if upstream.headers:
        parts.append(f"headers={','.join(upstream.headers)}")
    if not upstream.retries_first_byte_timeout:
        parts.append("retry_first_byte_timeout=false")
    return " ".join(parts)


def _profile_text(upstream: UpstreamSettings) -> str:
    """``openai`` or ``compatible``; ``(detected)`` when the table left it at ``auto``."""
    profile = str(upstream.resolved_profile)
    return f"{profile}(detected)" if upstream.profile == "auto" else profile


def _upstream_json(upstream: UpstreamSettings) -> dict[str, object]:
    return {
        "name": upstream.name,
        "base_url": upstream.base_url,
        "wire": upstream.wire,
        "models": list(upstream.models),
        "profile": upstream.profile,
        "profile_in_use": str(upstream.resolved_profile),
        "retry_first_byte_timeout": upstream.retries_first_byte_timeout,
        "api_key_env": upstream.api_key_env,
        "api_key": None if upstream.api_key is None else mask_secret(upstream.api_key),
        "headers": sorted(upstream.headers),
    }
