"""Redaction of secrets from the texts the gateway shows the model.

Contract. ``redact(text)`` returns the text with every secret it recognises replaced by a marker
``[redacted:<kind>]`` (the kind only: never the secret, a prefix of it, or a hash of it) and the
findings, ``Finding(kind, start, end)``, as offsets into the *original* text, sorted and
disjoint. Overlapping matches merge into one finding whose kind is the most specific among them
(``KINDS`` order: an OpenAI key under ``api_key=`` is an ``openai-key``, not a ``secret``).
``redact_json`` does the same inside a JSON value.

What is redacted (kind in brackets):

- provider keys and tokens by their shape: OpenAI ``sk-``/``sk-proj-`` [openai-key], Anthropic
  ``sk-ant-`` [anthropic-key], GitHub ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_`` [github-token],
  AWS ``AKIA``/``ASIA`` ids [aws-access-key-id], Slack ``xox[abposr]-`` [slack-token], Google
  ``AIza`` [google-api-key], Stripe-like ``sk_live_ rk_live_ sk_test_ rk_test_`` [stripe-key],
  JWTs ``eyJ<b64url>.<b64url>.<b64url>`` [jwt]; a run of ``sk-sk-sk-...`` is one key;
- ``Authorization: Bearer|Token <cred>`` [bearer-token] and ``Authorization: Basic <cred>``
  [basic-auth], and ``Bearer <cred>`` anywhere when the credential is 16+ characters with a
  digit (a token in a code string, not the word in prose);
- PEM private key blocks, BEGIN through END, whole [private-key]; an unterminated block is
  redacted to the end of the text (what follows BEGIN is key material until proven otherwise);
- the password of a URL with credentials, ``scheme://user:password@host`` [url-password]: the
  scheme, user and host stay (a user without a password, as in a Sentry DSN, stays too);
- the value, never the name, in ``NAME=value``, ``NAME: value``, ``"name": "value"``,
  ``NAME := value``, ``'name' => 'value'`` and ``--name value`` where NAME contains password,
  passwd, passphrase, pwd, secret, token, api key, access key, private key, or ends in auth
  [password when the name says pass or pwd, aws-secret-key for ``aws_secret...``, secret
  otherwise]. A quoted value goes up to its closing quote or, unterminated, to the end of its
  line; an unquoted one up to a space, quote, comma, semicolon, ``&`` or bracket.

What is never redacted on its shape alone: commit hashes, sha256 digests, UUIDs, paths, URLs
without credentials, numbers, base64 blobs (an inline ``data:image/png;base64,...`` image too:
it has a secret's shape, but redacting it would only hide a picture). Such a string is redacted
only as the value of a secret-named key. Named values that are not secrets are kept: counts,
types and places (``max_tokens``, ``token_count``, ``tokenizer``, names ending in file, path,
dir, url, uri, endpoint, type, count, limit, name, id, env, var, header, ttl, ...); upper-case
``PWD`` and ``OLDPWD`` (the shell's working directory; a lower-case ``pwd=`` is a password);
``Author:``; references (``${DB_PASSWORD}``, ``{{ secrets.X }}``, ``<placeholder>``,
``os.environ["X"]``, ``getpass()``, ``self.password``, ``password=password``, and, unless the
name says password, a constant's or a variable's name: ``api_key=PROVIDER_KEY``,
``api_key=key``); type annotations (``token: str``); booleans, nulls, values without a letter
or digit (``***``); bare numbers unless the name says password; a lone short word after a
colon (prose: ``Secret: see below``).

Idempotent: what a rule matches across a marker is clipped to the parts outside it, a value
that starts with a marker is none, and a marker's brackets count as token characters next to
a token, so redacting the output again finds nothing (bounds aside: see ``_VALUE``).

Linear: each rule makes one forward pass (``len(_RULES)`` passes whatever the input), and every
quantifier that could rescan is bounded or possessive. Pure: no I/O; import compiles the
patterns and nothing else.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Finding", "Redacted", "marker", "redact", "redact_json"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret: its kind and its offsets ``[start, end)`` in the original text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Redacted:
    """The redacted text and what was taken out of the original."""

    text: str
    findings: tuple[Finding, ...]


# The kinds, most specific first: when matches overlap, the merged finding takes the kind that
# comes first here.
KINDS: tuple[str, ...] = (
    "private-key",
    "anthropic-key",
    "openai-key",
    "github-token",
    "aws-access-key-id",
    "slack-token",
    "google-api-key",
    "stripe-key",
    "jwt",
    "basic-auth",
    "bearer-token",
    "url-password",
    "aws-secret-key",
    "password",
    "secret",
)
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}

_MARKER = re.compile(r"\[redacted:[a-z-]+\]")


def marker(kind: str) -> str:
    """The text that stands in for a secret of ``kind``."""
    return f"[redacted:{kind}]"


_Judge = Callable[[re.Match[str]], Finding | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One compiled pattern and the judge that turns each of its matches into a finding (or
    refuses it). ``scan`` is the one pass the rule makes over a text.

    A caseless rule also has ``folded``, the same pattern compiled case-sensitive, which scans
    the lower-cased text: the regex engine can then search for its literal prefixes, about ten
    times faster than trying every position as a case-insensitive pattern must."""

    name: str
    pattern: re.Pattern[str]
    judge: _Judge
    folded: re.Pattern[str] | None = None

    def scan(self, text: str, lowered: str | None) -> Iterator[Finding]:
        pattern, subject = self.pattern, text
        if self.folded is not None and lowered is not None:
            pattern, subject = self.folded, lowered
        at = 0
        while (match := pattern.search(subject, at)) is not None:
            finding = self.judge(match)
            if finding is None:
                # A refused match must not hide what it spans: "token_url=DB_PASSWORD=x" is
                # refused at token_url and holds a secret further on. Each restart needs a
                # new literal or secret word, and every run a pattern takes is bounded.
                at = match.start() + 1
                continue
            if finding.end > finding.start:
                yield finding
            at = max(match.end(), match.start() + 1)


def _caseless(name: str, source: str, judge: _Judge) -> _Rule:
    """A rule matching ``source`` in any case; ``source`` spells its literals in lower case."""
    return _Rule(name, re.compile(source, re.IGNORECASE), judge, re.compile(source))


def _lowered(text: str) -> str | None:
    """``text`` in lower case, or None where lowering changes a length (a few non-ASCII
    letters do), since the caseless rules' offsets must be the original's."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else None


def _whole(kind: str, group: int | str = 0, check: Callable[[str], bool] | None = None) -> _Judge:
    """A judge that takes ``group`` of the match as the secret, if ``check`` accepts it."""

    def judge(match: re.Match[str]) -> Finding | None:
        value = match.group(group)
        if check is not None and not check(value):
            return None
        return Finding(kind, match.start(group), match.end(group))

    return judge


# --- token shapes -------------------------------------------------------------------------
# Each pattern starts with its literal prefix so the regex engine can search for it instead of
# trying every position; the "no token character before" test comes right after the literal as
# a lookbehind, for the same reason. A marker's "]" before (or "[" after) counts as a token
# character: the text next to a marker was next to a token before it was redacted.

_TOK = "A-Za-z0-9_-"


def _prefixed(literal: str, body: str) -> re.Pattern[str]:
    lead = re.escape(literal)
    return re.compile(f"{lead}(?<![\\]{_TOK}]{lead}){body}")


def _openai_body(value: str) -> bool:
    # A slug such as "sk-blog-post-title" has the shape too; a key is long or has a digit.
    return len(value) >= 32 or any(c.isdigit() for c in value)


def _bearer_header_kind(match: re.Match[str]) -> Finding | None:
    if not _has_alnum(match.group("cred")):
        return None
    scheme = match.group("scheme").lower()
    kind = "basic-auth" if scheme == "basic" else "bearer-token"
    return Finding(kind, match.start("cred"), match.end("cred"))


def _stripe(match: re.Match[str]) -> Finding:
    return Finding("stripe-key", match.start() - 1, match.end())


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _has_alnum(value: str) -> bool:
    """A secret has a letter or a digit; ``***``, ``...`` or a stray ``)`` is none."""
    return any(c.isalnum() for c in value)


_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)

_TOKEN_RULES: tuple[_Rule, ...] = (
    _Rule("pem", _PEM, _whole("private-key")),
    _Rule("anthropic", _prefixed("sk-ant-", f"[{_TOK}]{{20,}}+"), _whole("anthropic-key")),
    _Rule(
        "openai",
        _prefixed("sk-", f"(?!ant-)[{_TOK}]{{20,}}+"),
        _whole("openai-key", check=_openai_body),
    ),
    _Rule("github", _prefixed("gh", r"[pousr]_[A-Za-z0-9]{30,}+"), _whole("github-token")),
    _Rule("github-pat", _prefixed("github_pat_", r"[A-Za-z0-9_]{22,}+"), _whole("github-token")),
    _Rule(
        "aws-id",
        re.compile(r"A(?<![A-Za-z0-9\]]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9\[])"),
        _whole("aws-access-key-id"),
    ),
    _Rule("slack", _prefixed("xox", r"[abposr]-[A-Za-z0-9-]{10,}+"), _whole("slack-token")),
    _Rule("google", _prefixed("AIza", f"[{_TOK}]{{35}}(?![\\[{_TOK}])"), _whole("google-api-key")),
    _Rule(
        "stripe",
        # Starts at the literal "k_"; the "s" or "r" before it is looked behind at and counted
        # back into the finding.
        re.compile(r"k_(?<![A-Za-z0-9_\]-][sr]k_)(?<=[sr]k_)(?:live|test)_[0-9A-Za-z]{16,}+"),
        _stripe,
    ),
    _Rule(
        "jwt",
        _prefixed("eyJ", f"[{_TOK}]{{8,}}+\\.[{_TOK}]{{8,}}+\\.[{_TOK}]{{8,}}+"),
        _whole("jwt"),
    ),
    _caseless(
        "authorization",
        r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?P<scheme>bearer|basic|token)[ \t]+(?P<cred>[A-Za-z0-9._~+/-]++=*)",
        _bearer_header_kind,
    ),
    _caseless(
        "bearer",
        r"bearer(?<![a-z\]]bearer)[ \t]+(?P<cred>[A-Za-z0-9._~+/-]{16,}+=*)",
        _whole("bearer-token", "cred", _has_digit),
    ),
    _Rule(
        "url",
        # Starts at "://" so the scan is a literal search; the scheme is kept, so it need not be
        # matched. Bounded runs keep a line of "://" repeats linear. A raw "@" ends the password
        # (a valid URL writes it %40); a raw "?" or "#" does not (logs print passwords raw).
        # Brackets are never in a URL's user info (RFC 3986 keeps them for IPv6 hosts), so a
        # marker, "[redacted:...]", is never read as a user or a password.
        re.compile(r"://[^\s:/?#@\"'<>\[\]]{0,256}+:(?P<pw>[^\s/@\"'<>\[\]]{1,256}+)@"),
        _whole("url-password", "pw"),
    ),
)

# --- named values -------------------------------------------------------------------------

# A word that makes a name secret. "tokens" and "tokenizer" count things; "auth" counts only
# at the end of a name ("basic_auth", not "author" or "auth_host").
_SECRET_WORD = (
    r"(?:pass(?:word|wd|phrase)|pwd|secret|token(?!s|iz)|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|auth(?:[_-]?key)?(?![\w-]))"
)
_SECRET_WORD_RE = re.compile(_SECRET_WORD, re.IGNORECASE)

# The name and its separator; the value is matched apart, once the name is known to hold a
# secret, so that a name that holds none costs no scan of its value.
_NAME = (
    rf"(?P<name>{_SECRET_WORD}[\w.-]{{0,64}}+)[\"']?"
    # An annotation between the name and "=" (``password: str = "..."``) is skipped.
    r"(?::[ \t]*[A-Za-z_][\w.\[\], |]{0,60}?[ \t]*(?==))?"
    # A space separates only a command-line flag from its value (``--password x``).
    r"(?:[ \t]*(?P<sep>:=|=>|[:=])(?!=)[ \t]*|(?P<space>[ \t]+))"
)
_VALUE = (
    # A quoted value runs to its closing quote, or, unterminated, to the end of the line; 16 KiB
    # at most (a PEM key in JSON is 2-4 KiB), so that every match is bounded.
    r"\"(?P<dq>(?:[^\"\\\n]|\\.){0,16384}+)\"?"
    r"|'(?P<sq>(?:[^'\\\n]|\\.){0,16384}+)'?"
    r"|(?:(?:bearer|basic|token)[ \t]+)?"
    # A bare value stops at what ends a value in env files, YAML, headers and query strings;
    # one followed by "(" or "[" is a call or a subscript in code, not a literal.
    r"(?P<bare>(?![=\[$<{(]|%\()[^\s\"'`,;&()\[\]{}<>]{1,4096}+)(?![(\[])"
)

_NOT_SECRET_NAME = re.compile(
    r"(?:file|path|dir|url|uri|endpoint|type|count|limit|len|length|usage|budget|name|ttl"
    r"|timeout|expiry|expires(?:_at|_in)?|env|var|header|[_.-]id)\Z",
    re.IGNORECASE,
)
_SHELL_CWD = frozenset({"PWD", "OLDPWD"})

# Bare values that are not secrets: literals, type names, auth scheme words.
_NOT_SECRET_VALUE = re.compile(
    r"(?:true|false|null|none|nil|yes|no|on|off|undefined|required|optional(?:\[.*)?"
    r"|str|bytes|int|float|bool|any|union|list|dict|tuple|secret\w*|string|number|boolean"
    r"|object|bearer|basic|token|digest)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # PROVIDER_KEY: a constant's name
_VARIABLE = re.compile(r"[a-z_]{1,32}")  # api_key=key: a variable passed on
_WORD = re.compile(r"[A-Za-z]{1,15}")
_REFERENCE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_]\w*|\{\{.*\}\}|<[^<>]*>|%\(\w+\)s")


def _name_start(text: str, end: int) -> int:
    """Where the name holding the secret word that starts at ``end`` begins (64 at most). A
    marker's "]" counts as part of a name, as the token it replaced did."""
    start = end
    floor = max(0, end - 64)
    while start > floor and (text[start - 1].isalnum() or text[start - 1] in "_.-]"):
        start -= 1
    return start


def _name_kind(name: str) -> str | None:
    """The kind of a secret held under ``name``, or None when the name holds no secret."""
    lowered = name.lower()
    if name in _SHELL_CWD or _NOT_SECRET_NAME.search(lowered) or name.endswith("Id"):
        return None
    if _SECRET_WORD_RE.search(name) is None:
        return None
    if "aws" in lowered and "secret" in lowered:
        return "aws-secret-key"
    if "pass" in lowered or "pwd" in lowered:
        return "password"
    return "secret"


def _bare_is_secret(value: str, name: str, kind: str, sep: str) -> bool:
    """Whether an unquoted value is a literal secret rather than code, a type or a count."""
    if _NOT_SECRET_VALUE.fullmatch(value) or _DOTTED.fullmatch(value):
        return False
    if kind != "password" and (_CONSTANT.fullmatch(value) or _VARIABLE.fullmatch(value)):
        return False
    if value.lower() == name.lower():  # password=password passes a variable on
        return False
    if sep == " " and value.startswith("-"):  # "--password --verbose": the next flag
        return False
    if kind != "password" and _NUMBER.fullmatch(value):
        return False
    # "the token: see below" is prose; a secret after a colon is rarely a short plain word.
    return not (sep == ":" and kind != "password" and _WORD.fullmatch(value))


def _judge_value(
    value: re.Match[str], original: str, name: str, kind: str, sep: str
) -> Finding | None:
    """The finding for a value matched in ``original`` (or in its lower-cased twin: the checks
    read the original's case, for ``PROVIDER_KEY`` is a constant and ``provider_key`` is not)."""
    group = next(g for g in ("dq", "sq", "bare") if value.group(g) is not None)
    text = original[value.start(group) : value.end(group)]
    # A value that starts with a marker was redacted already (up to a bound, if it is longer).
    if not _has_alnum(text) or _MARKER.match(text) or _REFERENCE.fullmatch(text):
        return None
    if group == "bare" and not _bare_is_secret(text, name, kind, sep):
        return None
    return Finding(kind, value.start(group), value.end(group))


@dataclass(frozen=True, slots=True)
class _NamedRule:
    """The rule for secrets under secret names. Like a ``_Rule`` it makes one pass, forward:
    after a name that holds no secret it goes on past the separator, after a value past the
    value, so no character is scanned as a value twice."""

    name: str
    names: re.Pattern[str]
    values: re.Pattern[str]
    folded_names: re.Pattern[str]
    folded_values: re.Pattern[str]

    @staticmethod
    def _not_a_name(subject: str, start: int, sep: str) -> bool:
        # "https://x-access-token:<password>@host" names a URL's user: the URL rule's.
        if start >= 3 and subject.startswith("://", start - 3):
            return True
        return sep == " " and not subject.startswith("--", start)

    def scan(self, text: str, lowered: str | None) -> Iterator[Finding]:
        names, values, subject = self.names, self.values, text
        if lowered is not None:
            names, values, subject = self.folded_names, self.folded_values, lowered
        at = 0
        while (match := names.search(subject, at)) is not None:
            at = match.end()
            start = _name_start(subject, match.start())
            name = text[start : match.end("name")]  # the original's case: PWD is not pwd
            sep = match.group("sep") or " "
            kind = None if self._not_a_name(subject, start, sep) else _name_kind(name)
            value = None if kind is None else values.match(subject, at)
            if kind is None or value is None:
                continue
            finding = _judge_value(value, text, name, kind, sep)
            if finding is not None:
                yield finding
            # Past a value, found or refused; but a flag's refused value may be the next flag.
            if finding is not None or sep != " ":
                at = max(value.end(), at)


def _named_rule() -> _NamedRule:
    caseless = re.IGNORECASE
    return _NamedRule(
        "named",
        re.compile(_NAME, caseless),
        re.compile(_VALUE, caseless),
        re.compile(_NAME),
        re.compile(_VALUE),
    )


_RULES: tuple[_Rule | _NamedRule, ...] = (*_TOKEN_RULES, _named_rule())


# --- redaction ----------------------------------------------------------------------------


def _merge(found: list[Finding]) -> tuple[Finding, ...]:
    """Sorted, disjoint findings: overlapping ones become one, of the most specific kind."""
    merged: list[Finding] = []
    for finding in sorted(found, key=lambda f: (f.start, -f.end)):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, finding.kind, key=_RANK.__getitem__)
            merged[-1] = Finding(kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    return tuple(merged)


def _apply(text: str, findings: tuple[Finding, ...]) -> str:
    """``text`` with each finding replaced by its marker. Offsets are into the original, so the
    pieces are cut from it in one pass (the same as replacing right to left, without copying
    the text once per finding)."""
    pieces: list[str] = []
    cursor = 0
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(marker(finding.kind))
        cursor = finding.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _clip(found: list[Finding], text: str) -> list[Finding]:
    """The findings less the markers they overlap: a marker is a redaction already, and a
    pattern that matches across one (``://[redacted:slack-token]@`` has a URL password's
    shape) must not redact it again. What is left of a finding goes if it has a letter or a
    digit. This is what keeps ``redact`` idempotent."""
    spans = [match.span() for match in _MARKER.finditer(text)]
    if not spans:
        return found
    starts = [start for start, _ in spans]
    clipped: list[Finding] = []
    for finding in found:
        cursor = finding.start
        at = max(bisect_right(starts, finding.start) - 1, 0)
        pieces: list[tuple[int, int]] = []
        while at < len(spans) and spans[at][0] < finding.end:
            start, end = spans[at]
            if end > cursor:
                pieces.append((cursor, start))
                cursor = end
            at += 1
        pieces.append((cursor, finding.end))
        clipped.extend(
            Finding(finding.kind, start, end)
            for start, end in pieces
            if start < end and _has_alnum(text[start:end])
        )
    return clipped


def redact(text: str) -> Redacted:
    """``text`` with its secrets replaced by markers, and where they were (see the module's
    contract). Each rule scans the text once; markers already in it are left alone, so
    redacting twice is redacting once."""
    lowered = _lowered(text)
    found = [finding for rule in _RULES for finding in rule.scan(text, lowered)]
    findings = _merge(_clip(found, text))
    return Redacted(_apply(text, findings) if findings else text, findings)


# --- JSON ---------------------------------------------------------------------------------


def _redact_string(value: str, key_kind: str | None, kinds: list[str]) -> str:
    found = redact(value)
    if key_kind is None or not value or _MARKER.fullmatch(value) or _REFERENCE.fullmatch(value):
        kinds.extend(finding.kind for finding in found.findings)
        return found.text
    # The whole string under a secret key goes; a recognised key shape names the kind.
    kind = min((key_kind, *(f.kind for f in found.findings)), key=_RANK.__getitem__)
    kinds.append(kind)
    return marker(kind)


def _walk(value: Any, key_kind: str | None, kinds: list[str]) -> Any:
    if isinstance(value, str):
        return _redact_string(value, key_kind, kinds)
    if isinstance(value, Mapping):
        return {
            key: _walk(item, _name_kind(key) if isinstance(key, str) else None, kinds)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        # A list under a secret key is a list of secrets ("api_keys": [...]).
        items = [_walk(item, key_kind, kinds) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if key_kind == "password" and isinstance(value, int | float) and not isinstance(value, bool):
        kinds.append(key_kind)  # a numeric password is still a password
        return marker(key_kind)
    return value


def redact_json(value: Any) -> tuple[Any, tuple[str, ...]]:
    """A copy of the JSON ``value`` with every string under a secret-named key replaced by a
    marker and every other string redacted as text, and the kinds taken out, one per
    redaction, in document order. Keys are kept as they are (they name things; rewriting them
    could make two keys one). Numbers under a password key go too; other numbers, booleans
    and nulls stay. The input is not mutated."""
    kinds: list[str] = []
    redacted = _walk(value, None, kinds)
    return redacted, tuple(kinds)
