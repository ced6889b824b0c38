"""The example configs in examples/: each loads with the real loader and holds no credential."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from skillstate.config import load_settings

EXAMPLES = Path(__file__).parents[2] / "examples"
NAMES = ["openai", "anthropic", "both", "local-openai-compatible"]
KEYS = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}


def test_the_common_setups_are_there() -> None:
    assert sorted(path.stem for path in EXAMPLES.glob("*.toml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_loads_with_the_real_loader(name: str, tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), **KEYS}
    settings = load_settings(environ=environ, config_path=str(EXAMPLES / f"{name}.toml"))
    upstreams = settings.resolved_upstreams()
    assert upstreams
    for upstream in upstreams:
        if upstream.api_key_env is not None:
            assert upstream.api_key is not None
            assert upstream.api_key.get_secret_value() == KEYS[upstream.api_key_env]


@pytest.mark.parametrize("name", NAMES)
def test_holds_no_credential(name: str) -> None:
    text = (EXAMPLES / f"{name}.toml").read_text()
    document = tomllib.loads(text)
    assert "api_key" not in document and "auth_token" not in document
    for table in document.get("upstreams", []):
        assert "api_key" not in table
        assert not any(name.lower() == "authorization" for name in table.get("headers", {}))
    values = [line.split("#")[0] for line in text.splitlines()]
    assert not [value for value in values if re.search(r"sk-[A-Za-z0-9]", value)]


def test_the_local_server_is_on_loopback(tmp_path: Path) -> None:
    path = str(EXAMPLES / "local-openai-compatible.toml")
    settings = load_settings(environ={"HOME": str(tmp_path)}, config_path=path)
    (local,) = settings.resolved_upstreams()
    assert local.base_url == "http://127.0.0.1:11434"
    assert local.wire == "openai-chat"
    assert local.api_key is None
    assert local.resolved_profile == "compatible" and not local.retries_first_byte_timeout
