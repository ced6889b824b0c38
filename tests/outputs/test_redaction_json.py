"""``redact_json``: strings under secret-named keys replaced whole, every other string redacted
as text, the input untouched, the kinds in document order."""

from __future__ import annotations

import copy
import json
from typing import Any

from test_redaction_fakes import ANTHROPIC, BEARER, JWT, OPENAI_PROJECT, PASSWORD, PEM, fill

from skillstate.outputs.redaction import redact_json


def _config() -> dict[str, Any]:
    return {
        "service": "orders",
        "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "database": {"host": "db.internal", "port": 5432, "password": PASSWORD},
        "providers": [
            {"name": "openai", "api_key": OPENAI_PROJECT, "max_tokens": 4096},
            {"name": "anthropic", "apiKey": ANTHROPIC},
        ],
        "log": f"GET /v1/items Authorization: Bearer {BEARER} -> 200",
        "client_secret": "plain-" + fill(12, "cs7"),
        "api_keys": ["k-" + fill(20, "ab1"), "k-" + fill(20, "cd2")],
        "private_key": PEM,
        "private_key_id": "0c1d2e3f4a5b6c7d8e9f00112233445566778899",
        "token_type": "bearer",
        "usage": {"input_tokens": 12, "output_tokens": 6},
        "pin": {"password": 123456, "retries": 3},
        "enabled": True,
        "auth": None,
        "url": "https://example.com/a/b?x=1",
    }


def test_secret_keys_lose_their_values_and_keep_their_names() -> None:
    out, kinds = redact_json(_config())
    assert out["database"] == {
        "host": "db.internal",
        "port": 5432,
        "password": "[redacted:password]",
    }
    assert out["providers"][0] == {
        "name": "openai",
        "api_key": "[redacted:openai-key]",
        "max_tokens": 4096,
    }
    assert out["providers"][1] == {"name": "anthropic", "apiKey": "[redacted:anthropic-key]"}
    assert out["log"] == "GET /v1/items Authorization: Bearer [redacted:bearer-token] -> 200"
    assert out["client_secret"] == "[redacted:secret]"
    assert out["api_keys"] == ["[redacted:secret]", "[redacted:secret]"]
    assert out["private_key"] == "[redacted:private-key]"
    assert out["pin"] == {"password": "[redacted:password]", "retries": 3}
    assert kinds == (
        "password",
        "openai-key",
        "anthropic-key",
        "bearer-token",
        "secret",
        "secret",
        "secret",
        "private-key",
        "password",
    )


def test_ordinary_values_stay_exactly() -> None:
    config = _config()
    out, _ = redact_json(config)
    for key in (
        "service",
        "commit",
        "private_key_id",
        "token_type",
        "usage",
        "enabled",
        "auth",
        "url",
    ):
        assert out[key] == config[key]
    assert out["enabled"] is True


def test_no_secret_survives_anywhere_in_the_output() -> None:
    out, _ = redact_json(_config())
    dumped = json.dumps(out)
    for secret in (PASSWORD, OPENAI_PROJECT, ANTHROPIC, BEARER, "plain-", fill(20, "ab1"), "MII"):
        assert secret not in dumped


def test_the_input_is_not_mutated_and_the_result_is_deterministic() -> None:
    config = _config()
    before = copy.deepcopy(config)
    first = redact_json(config)
    second = redact_json(config)
    assert config == before
    assert first == second
    assert first[0] is not config


def test_scalars_and_lists_at_the_top() -> None:
    assert redact_json("a JWT " + JWT) == ("a JWT [redacted:jwt]", ("jwt",))
    assert redact_json([1, "x", None]) == ([1, "x", None], ())
    assert redact_json(7) == (7, ())


def test_redacting_a_redacted_document_finds_nothing() -> None:
    out, _ = redact_json(_config())
    again, kinds = redact_json(out)
    assert again == out
    assert kinds == ()


def test_references_and_empty_values_under_secret_keys_stay() -> None:
    doc = {"password": "${DB_PASSWORD}", "token": "", "secret": "{{ secrets.X }}"}
    assert redact_json(doc) == (doc, ())
