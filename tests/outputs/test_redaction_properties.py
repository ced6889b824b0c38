"""Properties of ``redact``: for random surrounding text with a generated secret of each kind
put in it, the secret never shows in the output, a finding covers it, the text outside the
findings is unchanged, and redacting again changes nothing."""

from __future__ import annotations

import itertools
import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from skillstate.outputs.redaction import Redacted, marker, redact, redact_json

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64URL = ALNUM + "_-"

# What a secret starts with, in any case: surrounding text without these cannot start one.
PREFIXES = (
    "sk-",
    "sk_",
    "rk_",
    "gh",
    "github_pat_",
    "akia",
    "asia",
    "xox",
    "aiza",
    "eyj",
    "-----begin",
    "://",
    "bearer",
    "authorization",
)


def _no_prefix(text: str) -> bool:
    lowered = text.lower()
    return not any(prefix in lowered for prefix in PREFIXES)


surrounding = st.text(alphabet=string.printable, max_size=120).filter(_no_prefix)


def _token(lead: str, alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=low, max_size=high).map(lambda body: lead + body)


# Each strategy gives (the text to insert, the secret in it that must go).
def _whole(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    return strategy.map(lambda secret: (secret, secret))


def _named(name: str, form: str) -> st.SearchStrategy[tuple[str, str]]:
    values = st.text(alphabet=ALNUM + "!#%^*+/", min_size=12, max_size=40).filter(
        # All digits or all lower-case letters are a count or a variable's name, kept by design.
        lambda v: not v.isdigit() and re.fullmatch(r"[a-z_]+", v) is None
    )
    return values.map(lambda value: (form.format(name=name, value=value), value))


def _jwt() -> st.SearchStrategy[str]:
    segment = st.text(alphabet=B64URL, min_size=8, max_size=60)
    return st.tuples(segment, segment, segment).map(lambda p: f"eyJ{p[0]}.{p[1]}.{p[2]}")


def _url() -> st.SearchStrategy[tuple[str, str]]:
    password = st.text(alphabet=ALNUM + "!%*+~-", min_size=4, max_size=30)
    return password.map(lambda pw: (f"postgres://app:{pw}@db.internal:5432/app", pw))


def _pem() -> st.SearchStrategy[str]:
    lines = st.lists(st.text(alphabet=ALNUM + "+/", min_size=8, max_size=64), min_size=1)
    return lines.map(
        lambda body: (
            "-----BEGIN "
            + "EC PRIVATE KEY-----\n"
            + "\n".join(body)
            + "\n-----END EC PRIVATE KEY-----"
        )
    )


secrets = st.one_of(
    _whole(_token("sk-proj-", B64URL, 40, 80)),
    _whole(_token("sk-ant-api03-", B64URL, 20, 90)),
    _whole(
        st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]).flatmap(
            lambda lead: _token(lead, ALNUM, 36, 40)
        )
    ),
    _whole(_token("github_pat_", ALNUM + "_", 22, 90)),
    _whole(
        st.sampled_from(["AKIA", "ASIA"]).flatmap(lambda lead: _token(lead, UPPER_DIGITS, 16, 16))
    ),
    _whole(st.sampled_from("abposr").flatmap(lambda c: _token(f"xox{c}-", ALNUM + "-", 10, 50))),
    _whole(_token("AIza", B64URL, 35, 35)),
    _whole(
        st.sampled_from(["sk_live_", "rk_live_"]).flatmap(lambda lead: _token(lead, ALNUM, 16, 40))
    ),
    _whole(_jwt()),
    _whole(_pem()),
    _token("1", ALNUM + "._~+/-", 16, 40).map(lambda t: (f"Authorization: Bearer {t}", t)),
    _token("", ALNUM + "+/", 8, 40).map(lambda t: (f"Authorization: Basic {t}==", t)),
    _named("DB_PASSWORD", "{name}={value}"),
    _named("api_key", '"{name}": "{value}"'),
    _named("client_secret", "{name}: '{value}'"),
    _named("aws_secret_access_key", "{name} = {value}"),
    _url(),
)


def _outside_unchanged(text: str, result: Redacted) -> None:
    cursor, pieces = 0, []
    for finding in result.findings:
        pieces.append(text[cursor : finding.start] + marker(finding.kind))
        cursor = finding.end
    pieces.append(text[cursor:])
    assert "".join(pieces) == result.text


@settings(max_examples=400, deadline=None)
@given(before=surrounding, secret=secrets, after=surrounding, sep=st.sampled_from(" \n\t"))
def test_a_secret_in_random_text_never_survives(
    before: str, secret: tuple[str, str], after: str, sep: str
) -> None:
    inserted, value = secret
    text = before + sep + inserted + sep + after
    start = len(before) + 1 + inserted.index(value)
    result = redact(text)
    # The random text may hold the secret's characters by chance; the inserted one must go.
    assert result.text.count(value) <= before.count(value) + after.count(value)
    assert any(f.start <= start and start + len(value) <= f.end for f in result.findings)
    _outside_unchanged(text, result)
    again = redact(result.text)
    assert again.text == result.text


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_any_text_is_redacted_consistently_and_once(text: str) -> None:
    result = redact(text)
    _outside_unchanged(text, result)
    spans = [(f.start, f.end) for f in result.findings]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert redact(result.text).text == result.text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["name", "password", "api_key", "token", "max_tokens", "url", "x"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_redact_json_is_deterministic_and_idempotent(value: object) -> None:
    first = redact_json(value)
    assert redact_json(value) == first
    assert redact_json(first[0])[0] == first[0]


# Texts made of the pieces secrets and their contexts are made of, in any order: the places
# where one rule's match meets another's, or a marker, are where idempotence breaks first.
PIECES = [
    "password",
    "token",
    "api_key",
    "_url",
    "PWD",
    "=",
    ":",
    '"',
    "'",
    " ",
    "\n",
    "\\",
    ",",
    "(",
    "{",
    "$",
    ".",
    "--",
    "://",
    "@",
    "u:",
    "Bearer ",
    "Basic ",
    "Authorization: ",
    "sk-",
    "ghp_",
    "xoxb-",
    "AIza",
    "AKIA",
    "k_live_",
    "s",
    "r",
    "eyJ",
    "a1B2c3D4e5F6g7H8i9J0",
    "x" * 36,
    "ABCDEFGHIJKLMNOP",
    "-----BEGIN " + "PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "[redacted:secret]",
    "password:",
    "--token ",
    "PASSWORD",
    "_id",
    "%(",
    "*",
]


@settings(max_examples=1000, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_texts_of_secret_pieces_are_redacted_consistently_and_once(text: str) -> None:
    result = redact(text)
    _outside_unchanged(text, result)
    assert redact(result.text).text == result.text
