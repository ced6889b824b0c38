"""Checks of single values: URLs, hosts, schema keys, the initial state, headers, keys."""

from __future__ import annotations

import datetime
import re

import pytest

from skillstate.config import values


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com"),
        ("https://api.openai.com/v1/", "https://api.openai.com"),
        ("https://api.anthropic.com", "https://api.anthropic.com"),
        ("https://api.anthropic.com/", "https://api.anthropic.com"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api"),
        ("HTTP://127.0.0.1:8080/v1//", "http://127.0.0.1:8080"),
        ("http://[::1]:9/v10", "http://[::1]:9/v10"),
    ],
)
def test_base_urls_lose_a_trailing_slash_and_v1(written: str, stored: str) -> None:
    assert values.normalize_base_url(written) == stored


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("", "not a URL (empty or contains whitespace)"),
        ("https://a b", "not a URL (empty or contains whitespace)"),
        ("api.openai.com/v1", "not an http:// or https:// URL"),
        ("ftp://example.com", "not an http:// or https:// URL"),
        ("https:///v1", "has no host"),
        ("https://k:s@example.com", "must not hold credentials; set the API key separately"),
        ("https://example.com:99999", "has an invalid port"),
        ("https://example.com/v1?x=1", "must not have a query or a fragment"),
    ],
)
def test_bad_base_urls_say_why(written: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(reason)}$"):
        values.normalize_base_url(written)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::1", "localhost", "gw.example.com"])
def test_hosts(host: str) -> None:
    assert values.check_host(host) == host


@pytest.mark.parametrize("host", ["", "http://localhost", "localhost:8789", "[::1]", "a b", "-x"])
def test_bad_hosts(host: str) -> None:
    with pytest.raises(ValueError, match="not an IP address or host name"):
        values.check_host(host)


def test_schema_keys_are_unique_identifiers() -> None:
    assert values.check_schema(("step", "_notes", "findings2")) == ("step", "_notes", "findings2")
    for bad in ("2step", "a-b", "", "x" * 65):
        with pytest.raises(ValueError, match="is not an identifier"):
            values.check_schema((bad,))
    with pytest.raises(ValueError, match="'a' more than once"):
        values.check_schema(("a", "b", "a"))
    with pytest.raises(ValueError, match="reserved"):
        values.check_schema(("__proto__",))
    with pytest.raises(ValueError, match="at least one"):
        values.check_schema(())


def test_schema_holds_at_most_64_keys() -> None:
    keys = tuple(f"k{index}" for index in range(values.MAX_SCHEMA_KEYS))
    assert values.check_schema(keys) == keys
    with pytest.raises(ValueError, match="has 65 keys; at most 64"):
        values.check_schema((*keys, "one_more"))


def test_initial_state_refuses_reserved_keys_at_any_depth() -> None:
    with pytest.raises(ValueError, match="reserved key '__proto__' at the top"):
        values.check_state_object({"__proto__": {}})
    with pytest.raises(ValueError, match=re.escape("reserved key 'constructor' at .a[0]")):
        values.check_state_object({"a": [{"constructor": 1}]})


def test_initial_state_holds_json_only() -> None:
    assert values.check_state_object({"a": [1, 2.5, None, True, "x", {"b": {}}]})
    with pytest.raises(ValueError, match=re.escape("holds a datetime at .when")):
        values.check_state_object({"when": datetime.datetime(2026, 1, 1)})
    with pytest.raises(ValueError, match=re.escape("holds nan at .x")):
        values.check_state_object({"x": float("nan")})


def test_initial_state_is_bounded() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(values.MAX_STATE_DEPTH):
        node["n"] = {}
        node = node["n"]  # type: ignore[assignment]
    with pytest.raises(ValueError, match="nests deeper than 16 levels"):
        values.check_state_object(deep)
    big = {"blob": "x" * values.MAX_STATE_BYTES}
    with pytest.raises(ValueError, match="at most 65536 are allowed"):
        values.check_state_object(big)


def test_headers() -> None:
    assert values.check_headers({"X-Title": "skillstate"}) == {"X-Title": "skillstate"}
    with pytest.raises(ValueError, match="not an HTTP token"):
        values.check_headers({"X Title": "a"})
    with pytest.raises(ValueError, match="set by the gateway itself"):
        values.check_headers({"Content-Length": "1"})
    with pytest.raises(ValueError, match="given twice"):
        values.check_headers({"X-A": "1", "x-a": "2"})
    with pytest.raises(ValueError, match="line break"):
        values.check_headers({"X-A": "1\r\nX-B: 2"})


def test_api_keys_must_fit_in_a_header() -> None:
    assert values.check_api_key("sk-abc") == "sk-abc"
    for bad in ("sk abc", "sk-abc\n", "sk-\x00"):
        with pytest.raises(ValueError, match="whitespace or control"):
            values.check_api_key(bad)
    with pytest.raises(ValueError, match="empty"):
        values.check_api_key("")


def test_the_gateway_token_fits_a_header_and_is_not_short() -> None:
    assert values.check_token("x" * 16) == "x" * 16
    with pytest.raises(ValueError, match="at least 16"):
        values.check_token("x" * 15)
    with pytest.raises(ValueError, match="whitespace or control"):
        values.check_token("x" * 16 + " y")


def test_allowed_hosts_are_bare_names_or_addresses() -> None:
    assert values.check_allowed_hosts(("GW.Lan.", "[::1]", "10.0.0.2", "*")) == (
        "gw.lan",
        "::1",
        "10.0.0.2",
        "*",
    )
    for bad in ("gw.lan:8789", "http://gw.lan", "a b", ""):
        with pytest.raises(ValueError, match="not a host name"):
            values.check_allowed_hosts((bad,))


def test_allowed_origins_are_written_as_browsers_send_them() -> None:
    assert values.check_allowed_origins(("HTTP://LocalHost:3000", "https://a.example", "*")) == (
        "http://localhost:3000",
        "https://a.example",
        "*",
    )
    for bad in ("localhost:3000", "http://a.example/", "http://a.example/x", "ftp://a", "null"):
        with pytest.raises(ValueError, match="not an origin"):
            values.check_allowed_origins((bad,))


def test_names() -> None:
    assert values.check_upstream_name("open-ai.v2_x") == "open-ai.v2_x"
    with pytest.raises(ValueError):
        values.check_upstream_name("-x")
    assert values.check_env_name("OPENAI_API_KEY") == "OPENAI_API_KEY"
    with pytest.raises(ValueError, match="not an environment variable name"):
        values.check_env_name("OPENAI-KEY")
