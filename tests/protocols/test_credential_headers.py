"""Which header carries a credential upstream: on Anthropic the token decides (an OAuth access
token as ``Authorization: Bearer``, an API key as ``x-api-key``), whatever header the client
used; OpenAI takes every key as a bearer token."""

from __future__ import annotations

import pytest

from skillstate.conversation import Wire
from skillstate.protocols.headers import credential_headers, upstream_headers

API_KEY = "sk-ant-api03-abcdefghijklmnop"
OAUTH = "sk-ant-oat01-abcdefghijklmnop"
BEARER = {"Authorization": f"Bearer {API_KEY}"}


def credential(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k in ("authorization", "x-api-key", "api-key")}


@pytest.mark.parametrize("client_wire", [Wire.CHAT, Wire.RESPONSES])
def test_an_openai_clients_anthropic_key_goes_in_x_api_key(client_wire: Wire) -> None:
    sent = upstream_headers(
        BEARER, client_wire=client_wire, upstream_wire=Wire.MESSAGES, api_key=None
    )
    assert credential(sent) == {"x-api-key": API_KEY}


@pytest.mark.parametrize("client_wire", list(Wire))
def test_an_oauth_token_stays_a_bearer_token_on_anthropic(client_wire: Wire) -> None:
    for client in ({"authorization": f"Bearer {OAUTH}"}, {"x-api-key": OAUTH}):
        sent = upstream_headers(
            client, client_wire=client_wire, upstream_wire=Wire.MESSAGES, api_key=None
        )
        assert credential(sent) == {"authorization": f"Bearer {OAUTH}"}


def test_an_anthropic_client_bearing_an_api_key_sends_it_as_x_api_key() -> None:
    sent = upstream_headers(
        BEARER, client_wire=Wire.MESSAGES, upstream_wire=Wire.MESSAGES, api_key=None
    )
    assert credential(sent) == {"x-api-key": API_KEY}


def test_a_configured_key_takes_the_form_its_token_needs() -> None:
    oauth_client = {"authorization": f"Bearer {OAUTH}"}
    for configured, expected in (
        (API_KEY, {"x-api-key": API_KEY}),
        (OAUTH, {"authorization": f"Bearer {OAUTH}"}),
        ("proxy-key", {"x-api-key": "proxy-key"}),
    ):
        sent = upstream_headers(
            oauth_client, client_wire=Wire.MESSAGES, upstream_wire=Wire.MESSAGES, api_key=configured
        )
        assert credential(sent) == expected


def test_a_token_of_no_known_form_keeps_the_form_an_anthropic_client_chose() -> None:
    assert credential_headers(
        Wire.MESSAGES,
        "proxy-token",
        client={"Authorization": "Bearer proxy-token"},
        client_wire=Wire.MESSAGES,
    ) == {"authorization": "Bearer proxy-token"}
    assert credential_headers(
        Wire.MESSAGES,
        "proxy-token",
        client={"x-api-key": "proxy-token"},
        client_wire=Wire.MESSAGES,
    ) == {"x-api-key": "proxy-token"}
    # From an OpenAI client, Authorization is only the wire's habit: Anthropic's header wins.
    assert credential_headers(
        Wire.MESSAGES,
        "proxy-token",
        client={"Authorization": "Bearer proxy-token"},
        client_wire=Wire.CHAT,
    ) == {"x-api-key": "proxy-token"}


@pytest.mark.parametrize("key", [API_KEY, OAUTH, "sk-proj-123"])
def test_openai_takes_every_key_as_a_bearer_token(key: str) -> None:
    for client_wire in Wire:
        sent = upstream_headers(
            {"x-api-key": key}, client_wire=client_wire, upstream_wire=Wire.CHAT, api_key=None
        )
        assert credential(sent) == {"authorization": f"Bearer {key}"}
