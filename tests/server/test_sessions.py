"""Session identity: our header, each real client's own signal, then a fingerprint."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.conversation import ProtocolError, Wire
from skillstate.server.sessions import canonical_json, resolve_session

CHAT = {
    "model": "m",
    "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
}


def test_our_header_wins() -> None:
    got = resolve_session({"x-skillstate-session": "abc-1", "session-id": "codex"}, CHAT, Wire.CHAT)
    assert (got.id, got.source) == ("abc-1", "header")


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "semi;colon", "ünï"])
def test_bad_header_is_refused(bad: str) -> None:
    with pytest.raises(ProtocolError, match="x-skillstate-session"):
        resolve_session({"x-skillstate-session": bad}, CHAT, Wire.CHAT)


@pytest.mark.parametrize(
    ("headers", "source"),
    [
        ({"x-claude-code-session-id": "c1"}, "claude-code"),
        ({"session-id": "c1", "thread-id": "t"}, "codex"),
        ({"x-session-id": "c1"}, "opencode"),
    ],
)
def test_client_header_signals(headers: dict[str, str], source: str) -> None:
    got = resolve_session(headers, CHAT, Wire.CHAT)
    assert (got.id, got.source) == ("c1", source)


def test_claude_code_metadata_user_id_both_forms() -> None:
    current = {"metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "s-9"})}}
    older = {"metadata": {"user_id": "user_abc_account_def_session_s-8"}}
    assert resolve_session({}, current, Wire.MESSAGES).id == "s-9"
    assert resolve_session({}, older, Wire.MESSAGES).id == "s-8"


def test_prompt_cache_key() -> None:
    got = resolve_session({}, {"prompt_cache_key": "k-1", "input": "x"}, Wire.RESPONSES)
    assert (got.id, got.source) == ("k-1", "prompt-cache-key")


def test_invalid_client_signal_is_hashed_stably() -> None:
    a = resolve_session({"x-session-id": "has spaces/and:more"}, CHAT, Wire.CHAT)
    b = resolve_session({"x-session-id": "has spaces/and:more"}, CHAT, Wire.CHAT)
    assert a.id == b.id and a.id.startswith("h-") and len(a.id) == 34


def test_fingerprint_is_stable_as_the_conversation_grows() -> None:
    first = resolve_session({}, CHAT, Wire.CHAT)
    grown = {**CHAT, "messages": [*CHAT["messages"], {"role": "assistant", "content": "A"}]}
    assert resolve_session({}, grown, Wire.CHAT) == first
    assert first.source == "fingerprint" and first.id.startswith("fp-")
    other = {**CHAT, "messages": [CHAT["messages"][0], {"role": "user", "content": "other"}]}
    assert resolve_session({}, other, Wire.CHAT).id != first.id


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_the_fingerprint_json_is_the_standard_librarys_to_the_byte(value: object) -> None:
    """The fingerprint's contract is the standard library's compact, key-sorted JSON; the
    fast writer must give the same bytes for any value a body holds, or fall back to it."""
    standard = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == standard.encode("utf-8", "surrogatepass")
