"""``protocols.logins``: the kind of credential a request carries, from its headers."""

from __future__ import annotations

import pytest

from skillstate.protocols.logins import Login, login_of

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl"
OAUTH = "sk-ant-oat01-abcdefghijklmnop"


@pytest.mark.parametrize(
    ("headers", "gateway_key", "login"),
    [
        ({}, False, Login.NONE),
        ({}, True, Login.GATEWAY_KEY),
        ({"Authorization": "Bearer sk-proj-abc"}, False, Login.API_KEY),
        ({"x-api-key": "sk-ant-api03-abc"}, False, Login.API_KEY),
        ({"authorization": "Bearer sk-proj-abc"}, True, Login.GATEWAY_KEY),
        ({"Authorization": f"Bearer {OAUTH}"}, False, Login.ANTHROPIC_SUBSCRIPTION),
        # a subscription stays one where the gateway holds a key
        ({"authorization": f"bearer {OAUTH}"}, True, Login.ANTHROPIC_SUBSCRIPTION),
        # an OAuth token sent as an API key is not how Claude Code logs in
        ({"x-api-key": OAUTH}, False, Login.API_KEY),
        ({"Authorization": f"Bearer {JWT}", "ChatGPT-Account-ID": "acct-1"}, False, Login.CHATGPT),
        ({"Authorization": f"Bearer {JWT}", "chatgpt-account-id": "acct-1"}, True, Login.CHATGPT),
        # a JWT without the account header, or the header without a JWT: not a ChatGPT login
        ({"Authorization": f"Bearer {JWT}"}, False, Login.API_KEY),
        ({"Authorization": "Bearer sk-abc", "ChatGPT-Account-ID": "acct-1"}, False, Login.API_KEY),
        ({"Authorization": f"Bearer {JWT}", "ChatGPT-Account-ID": " "}, False, Login.API_KEY),
    ],
)
def test_each_kind_of_credential_is_told(
    headers: dict[str, str], gateway_key: bool, login: Login
) -> None:
    assert login_of(headers, gateway_key=gateway_key) is login


def test_only_the_two_logins_are_subscriptions() -> None:
    assert {login for login in Login if login.subscription} == {
        Login.ANTHROPIC_SUBSCRIPTION,
        Login.CHATGPT,
    }
