"""``redact``: each kind of secret in the contexts it turns up in, the names kept and the values
gone, the offsets, no false positives on ordinary developer text, idempotence, merging, the
cost of a scan, and adversarial inputs."""

from __future__ import annotations

import itertools

import pytest
from test_redaction_fakes import (
    ANTHROPIC,
    AWS_KEY_ID,
    AWS_SECRET,
    AWS_SESSION_KEY_ID,
    BASIC,
    BEARER,
    GITHUB,
    GITHUB_PAT,
    GOOGLE,
    JWT,
    OPENAI_LEGACY,
    OPENAI_PROJECT,
    PASSWORD,
    PEM,
    SLACK,
    STRIPE_LIVE,
    STRIPE_RESTRICTED,
    fill,
)

from skillstate.outputs import redaction
from skillstate.outputs.redaction import KINDS, Finding, Redacted, marker, redact

S = "{s}"

# (template with {s} where the secret goes, the secret, its kind, a part of the text that stays)
CASES: list[tuple[str, str, str, str]] = [
    # OpenAI
    ("OPENAI_API_KEY={s}\nLOG_LEVEL=info\n", OPENAI_PROJECT, "openai-key", "LOG_LEVEL=info"),
    ("export OPENAI_API_KEY='{s}'", OPENAI_LEGACY, "openai-key", "export OPENAI_API_KEY='"),
    ('{"openai": {"api_key": "{s}", "model": "gpt-4o"}}', OPENAI_PROJECT, "openai-key", '"model"'),
    ('client = OpenAI(api_key="{s}")', OPENAI_LEGACY, "openai-key", 'OpenAI(api_key="'),
    ("2026-12-01 INFO using key {s} for org-7", OPENAI_PROJECT, "openai-key", "for org-7"),
    # Anthropic
    (
        'curl -H "x-api-key: {s}" https://api.anthropic.com/v1/messages',
        ANTHROPIC,
        "anthropic-key",
        "https://api.anthropic.com/v1/messages",
    ),
    ("ANTHROPIC_API_KEY={s}", ANTHROPIC, "anthropic-key", "ANTHROPIC_API_KEY="),
    ("anthropic:\n  key: {s}\n  model: claude\n", ANTHROPIC, "anthropic-key", "model: claude"),
    # GitHub
    *[
        (f"export GH_TOKEN={S}\n", token, "github-token", "export GH_TOKEN=")
        for token in GITHUB.values()
    ],
    (
        "git clone https://x-access-token:{s}@github.com/o/r.git",
        GITHUB["ghs"],
        "github-token",
        "@github.com/o/r.git",
    ),
    ('headers = {"Authorization": "token {s}"}', GITHUB["ghp"], "github-token", "headers = {"),
    ("GITHUB_PAT: {s}", GITHUB_PAT, "github-token", "GITHUB_PAT: "),
    # AWS
    (
        "[default]\naws_access_key_id = {s}\nregion = eu-west-1\n",
        AWS_KEY_ID,
        "aws-access-key-id",
        "region = eu-west-1",
    ),
    ("export AWS_ACCESS_KEY_ID={s}", AWS_SESSION_KEY_ID, "aws-access-key-id", "export AWS_"),
    (
        "[default]\naws_secret_access_key = {s}\n",
        AWS_SECRET,
        "aws-secret-key",
        "aws_secret_access_key = ",
    ),
    ('{"AWS_SECRET_ACCESS_KEY": "{s}"}', AWS_SECRET, "aws-secret-key", '"AWS_SECRET_ACCESS_KEY"'),
    # Slack
    ("SLACK_BOT_TOKEN={s}", SLACK, "slack-token", "SLACK_BOT_TOKEN="),
    (
        "POST https://slack.com/api/chat.postMessage token={s}&channel=C024BE91L",
        SLACK,
        "slack-token",
        "&channel=C024BE91L",
    ),
    # Google
    (
        "https://maps.googleapis.com/maps/api/geocode/json?address=x&key={s}",
        GOOGLE,
        "google-api-key",
        "https://maps.googleapis.com/maps/api/geocode/json?address=x&key=",
    ),
    ("firebase:\n  apiKey: {s}\n", GOOGLE, "google-api-key", "apiKey: "),
    # Stripe
    ("stripe.api_key = '{s}'", STRIPE_LIVE, "stripe-key", "stripe.api_key = '"),
    (
        "charge failed with key {s}: card_declined",
        STRIPE_RESTRICTED,
        "stripe-key",
        ": card_declined",
    ),
    # JWT
    ("id_token={s}; Path=/; HttpOnly", JWT, "jwt", "; Path=/; HttpOnly"),
    ('{"session": "{s}", "expires_in": 3600}', JWT, "jwt", '"expires_in": 3600'),
    # Authorization headers and bearer tokens in code
    (
        "curl -H 'Authorization: Bearer {s}' https://api.example.com/v1/items",
        BEARER,
        "bearer-token",
        "https://api.example.com/v1/items",
    ),
    (
        "> GET / HTTP/1.1\n> authorization: bearer {s}\n> Accept: */*",
        BEARER,
        "bearer-token",
        "> Accept: */*",
    ),
    (
        'requests.get(url, headers={"Authorization": "Bearer {s}"})',
        BEARER,
        "bearer-token",
        "requests.get(url, headers=",
    ),
    ("fetch(url, {headers: {auth: `Bearer {s}`}})", BEARER, "bearer-token", "fetch(url"),
    ("Authorization: Basic {s}\r\nHost: example.com", BASIC, "basic-auth", "Host: example.com"),
    # PEM private keys in the middle of text
    (
        "key for the deploy box:\n{s}\nrotate it after use\n",
        PEM,
        "private-key",
        "rotate it after use",
    ),
    (
        '{"private_key": "{s}", "client_email": "a@b.iam.example.com"}',
        PEM.replace("\n", "\\n"),
        "private-key",
        '"client_email": "a@b.iam.example.com"',
    ),
    # Passwords and secrets under their names
    ("DB_PASSWORD={s}\nDB_HOST=db.internal\n", PASSWORD, "password", "DB_HOST=db.internal"),
    ("export PGPASSWORD='{s}'", PASSWORD, "password", "export PGPASSWORD='"),
    ('{"username": "deploy", "password": "{s}"}', PASSWORD, "password", '"username": "deploy"'),
    (
        "DATABASES = {'default': {'PASSWORD': '{s}', 'PORT': 5432}}",
        PASSWORD,
        "password",
        "'PORT': 5432",
    ),
    ("database:\n  user: app\n  passwd: {s}\n  port: 5432\n", PASSWORD, "password", "port: 5432"),
    (
        "2026-12-01 WARN login failed user=bob pwd={s} ip=10.0.0.7",
        PASSWORD,
        "password",
        "ip=10.0.0.7",
    ),
    ("mysql --user=root --password={s} shop", PASSWORD, "password", " shop"),
    ("mysql --user root --password {s} shop", PASSWORD, "password", "--password "),
    ("gh auth login --with-token --token {s}", "t0k" + fill(20), "secret", "--with-token --token "),
    ("password: str = '{s}'", PASSWORD, "password", "password: str = '"),
    ("$settings = ['db_password' => '{s}'];", PASSWORD, "password", "'db_password' => '"),
    ("client_secret: {s}\nclient_id: 1234", "c5e" + fill(29, "Cl1s"), "secret", "client_id: 1234"),
    ('SECRET_KEY = "{s}"', "django-insecure-" + fill(30, "dJ4n"), "secret", "SECRET_KEY = "),
    ("X-Api-Key: {s}\r\n", fill(32, "xK9e"), "secret", "X-Api-Key: "),
    ("basic_auth={s}", "admin:" + PASSWORD, "secret", "basic_auth="),
    ("PRIVATE_KEY={s}", fill(44, "Pk8/"), "secret", "PRIVATE_KEY="),
    # Credentials in URLs: the scheme, user and host stay
    (
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        PASSWORD,
        "url-password",
        "postgres://app:",
    ),
    (
        'File "/srv/app/db.py", line 12\nOperationalError: could not connect to '
        "mysql://root:{s}@127.0.0.1:3306/shop",
        PASSWORD,
        "url-password",
        "@127.0.0.1:3306/shop",
    ),
    ("cache:\n  url: redis://:{s}@cache:6379/0\n", PASSWORD, "url-password", "redis://:"),
    ("amqp://guest:{s}@rabbit//", "g#st?" + PASSWORD, "url-password", "@rabbit//"),
]


def _place(template: str, secret: str) -> tuple[str, int]:
    start = template.index(S)
    return template.replace(S, secret, 1), start


@pytest.mark.parametrize(("template", "secret", "kind", "kept"), CASES)
def test_each_kind_is_redacted_in_context(template: str, secret: str, kind: str, kept: str) -> None:
    text, start = _place(template, secret)
    result = redact(text)
    assert secret not in result.text
    assert kept in result.text
    assert Finding(kind, start, start + len(secret)) in result.findings
    assert text[start : start + len(secret)] == secret
    assert marker(kind) in result.text
    assert result.text == template.replace(S, marker(kind), 1)


def test_the_cases_cover_every_kind() -> None:
    assert {kind for _, _, kind, _ in CASES} == set(KINDS)


def test_the_marker_names_the_kind_only() -> None:
    assert marker("openai-key") == "[redacted:openai-key]"
    text = "k=" + OPENAI_LEGACY
    assert redact(text).text == "k=[redacted:openai-key]"


def test_findings_are_sorted_disjoint_offsets_into_the_original() -> None:
    text = (
        f"OPENAI_API_KEY={OPENAI_PROJECT}\nDB_PASSWORD={PASSWORD}\n"
        f"Authorization: Bearer {JWT}\n{PEM}\npostgres://u:{PASSWORD}@h/db\n"
    )
    result = redact(text)
    spans = [(f.start, f.end) for f in result.findings]
    assert spans == sorted(spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    assert [text[f.start : f.end] for f in result.findings] == [
        OPENAI_PROJECT,
        PASSWORD,
        JWT,
        PEM,
        PASSWORD,
    ]
    assert [f.kind for f in result.findings] == [
        "openai-key",
        "password",
        "jwt",
        "private-key",
        "url-password",
    ]


def test_overlapping_matches_merge_into_the_most_specific_kind() -> None:
    # The named rule and the key rule both match the value; one finding, the key's kind.
    result = redact(f'api_key = "{OPENAI_PROJECT}"')
    assert [f.kind for f in result.findings] == ["openai-key"]
    # A JWT sent as a bearer token: one finding, a jwt.
    result = redact(f"Authorization: Bearer {JWT}")
    assert result.findings == (Finding("jwt", 22, 22 + len(JWT)),)
    # A named value wider than the key inside it: the union goes.
    value = "prefix " + GITHUB["ghp"]
    result = redact(f'token="{value}"')
    assert result.findings == (Finding("github-token", 7, 7 + len(value)),)


def test_a_pem_block_goes_whole_and_the_text_around_it_stays() -> None:
    text = f"before\n{PEM}\nafter"
    assert redact(text).text == "before\n[redacted:private-key]\nafter"


def test_an_unterminated_pem_block_is_redacted_to_the_end_of_the_text() -> None:
    # What follows BEGIN is key material until END says otherwise: a truncated tool output
    # must not show the half it kept.
    head = "log line\n"
    text = head + PEM[: PEM.index("-----END")] + "more text that may be key material"
    result = redact(text)
    assert result.findings == (Finding("private-key", len(head), len(text)),)
    assert result.text == head + "[redacted:private-key]"


def test_two_pem_blocks_are_two_findings() -> None:
    text = f"{PEM}\nbetween\n{PEM.replace('RSA ', 'EC ')}"
    result = redact(text)
    assert [f.kind for f in result.findings] == ["private-key", "private-key"]
    assert "between" in result.text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("postgres://app:{s}@db:5432/app", "postgres://app:[redacted:url-password]@db:5432/app"),
        ("https://user:{s}@example.com/path?q=1", "https://user:[redacted:url-password]@example."),
        ("redis://:{s}@cache:6379", "redis://:[redacted:url-password]@cache:6379"),
    ],
)
def test_a_url_keeps_scheme_user_and_host(text: str, kept: str) -> None:
    assert redact(text.replace(S, PASSWORD)).text.startswith(kept)


# Ordinary developer text: nothing in it is a secret.
ORDINARY = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Jane Doe <jane@example.com>",
    "Merge: 1a2b3c4 5d6e7f8\n    auth: refresh the token before expiry (#431)",
    "diff --git a/src/auth/tokens.py b/src/auth/tokens.py\nindex 3b18e51..a1c2d3f 100644",
    "-    def refresh(self, token: str) -> None:\n+    def refresh(self, token: str | None):",
    "+        password = password or getpass.getpass()",
    "+        secret = self.vault.lookup(self.secret_name)",
    "+        self.api_key = os.environ['API_KEY']",
    "login(user=self.user, password=password)",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt",
    "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    "/home/jane/src/app/auth/secrets/tokens.py:88:14: E1101 no member",
    r"C:\Users\jane\AppData\Local\app\secrets.ini",
    "https://docs.example.com/guides/auth?section=tokens#refresh",
    "http://localhost:8789/v1/messages and https://example.com:8443/a/b",
    "git@github.com:example/orders.git",
    "the token count is 42, and the tokens used are 1843",
    'max_tokens=4096 input_tokens: 12 "output_tokens": 6 token_count=17 tokenizer=cl100k',
    "token_type: bearer, token_limit: 200000, token_url=https://oauth2.example.com/token",
    "PWD=/home/jane/src OLDPWD=/home/jane",  # the shell's; a lower-case pwd= is a password
    "The password field is required. Secret: see below. Token: none yet.",
    "password: null\nsecret: true\ntoken: ***\n",
    'api_key_env = "OPENAI_API_KEY"\nTOKEN_HEADER = "x-skillstate-token"',
    "client(api_key=PROVIDER_KEY, token=TOKEN)\nOpenAI(api_key=key, secret=configured_secret)",
    'raise ValueError("missing SKILLSTATE_AUTH_TOKEN:")',
    "requests carry ``Authorization: Bearer ...`` headers",
    "API_TOKEN: ${ORDERS_API_TOKEN}\nGITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    'password = "<your password here>"',
    "test_redaction_keeps_long_names_like_TestVeryLongBase64ishFixtureNameAbCdEfGh0123",
    "The Bearer authentication scheme and Basic authentication are in RFC 6750 and 7617.",
    "Authorization: Bearer $TOKEN",
    "run --password --verbose; gh auth login --web; app --token-file /run/secrets/token",
    "sk-learn is scikit-learn; see the sk-blog post",
    "eyJhbGciOiJIUzI1NiJ9 alone is a JWT header, not a token",
    "aws_region=eu-west-1 access_key_id_rotation_days: 90",
    "secret_id: arn-12 private_key_id=0c1d2e3f4a5b6c7d8e9f00112233445566778899",
    # Inline images are kept: their shape is a secret's shape, but they hide nothing.
    "![diagram](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ)",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_developer_text_is_left_alone(text: str) -> None:
    result = redact(text)
    assert result.findings == ()
    assert result.text == text


def test_an_identifier_under_a_secret_name_is_redacted() -> None:
    commit = "9fceb02d0ae598e95dc970b74767f19372d61af8"
    result = redact(f"token={commit}")
    assert result.text == "token=[redacted:secret]"


def test_a_constant_under_a_password_name_goes_under_another_name_stays() -> None:
    # DB_PASSWORD=SUPER_SECRET_1 may be the password itself; api_key=PROVIDER_KEY is code.
    assert redact("DB_PASSWORD=SUPER_SECRET_1").text == "DB_PASSWORD=[redacted:password]"
    assert redact("API_KEY=PROVIDER_KEY").findings == ()
    assert redact("password=hunter").text == "password=[redacted:password]"
    assert redact("secret=hunter").findings == ()


def test_a_numeric_password_goes_a_numeric_setting_stays() -> None:
    assert redact("password=123456").text == "password=[redacted:password]"
    assert redact("auth_timeout=30 secret_version: 2").findings == ()


@pytest.mark.parametrize(("template", "secret", "kind", "kept"), CASES)
def test_redacting_twice_is_redacting_once(
    template: str, secret: str, kind: str, kept: str
) -> None:
    once = redact(_place(template, secret)[0])
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.findings == ()


def test_redact_returns_a_frozen_value() -> None:
    result = redact("x")
    assert result == Redacted("x", ())
    with pytest.raises(AttributeError):
        result.text = "y"  # type: ignore[misc]


def test_the_public_surface() -> None:
    assert redaction.__all__ == ["KINDS", "Finding", "Redacted", "marker", "redact", "redact_json"]


class _Counting:
    """A rule that counts its passes."""

    def __init__(self, rule: object, passes: list[str]) -> None:
        self._rule = rule
        self._passes = passes

    def scan(self, text: str, lowered: str | None) -> object:
        self._passes.append(self._rule.name)
        return self._rule.scan(text, lowered)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "short",
        ("INFO GET /v1/items 200 id=3f2a9c1e-1b2c-4d5e-8f90-123456789abc token=abc123\n") * 12_000,
        (f"password={PASSWORD} {OPENAI_LEGACY} {JWT}\n") * 5_000,
    ],
)
def test_each_rule_makes_one_pass_whatever_the_input(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    passes: list[str] = []
    rules = redaction._RULES
    monkeypatch.setattr(redaction, "_RULES", tuple(_Counting(r, passes) for r in rules))
    redact(text)
    assert passes == [rule.name for rule in rules]


def _consistent(text: str, result: Redacted) -> None:
    """The output is the input with each finding replaced by its marker, nothing else."""
    ends = [0, *(f.end for f in result.findings)]
    starts = [*(f.start for f in result.findings), len(text)]
    pieces = [text[a:b] for a, b in zip(ends, starts, strict=True)]
    markers = [marker(f.kind) for f in result.findings]
    rebuilt = "".join(p + m for p, m in zip(pieces, [*markers, ""], strict=True))
    assert rebuilt == result.text


ADVERSARIAL = [
    "a" * 300_000,
    "=" * 300_000,
    "a=" * 150_000,
    "sk-" * 100_000,
    ("sk-" * 50_000) + " " + OPENAI_PROJECT,
    "://" * 100_000,
    "://a:" * 60_000 + "@",
    "password=" * 30_000,
    'password="' + 'password=\\"' * 30_000,
    "token_url=" * 30_000,
    "Bearer " * 40_000,
    "authorization: bearer " * 10_000,
    ("-----BEGIN " + "PRIVATE KEY-----\n") * 10_000,
    "eyJ." * 60_000,
    "AKIA" * 60_000,
    "\n".join(["x" * 10_000] * 30),
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:12]))
def test_adversarial_inputs_complete_and_stay_consistent(text: str) -> None:
    result = redact(text)
    _consistent(text, result)
    assert redact(result.text).text == result.text


def test_a_huge_run_of_key_prefixes_is_one_key() -> None:
    # "sk-sk-sk-…" has a key's shape from its first prefix on: one finding, all of it.
    text = "sk-" * 100_000
    assert redact(text).findings == (Finding("openai-key", 0, len(text)),)
    text = "sk-" * 50_000 + " " + OPENAI_PROJECT
    assert OPENAI_PROJECT not in redact(text).text


def test_a_refused_name_does_not_hide_a_secret_after_it() -> None:
    result = redact(f"token_url=DB_PASSWORD={PASSWORD}")
    assert result.text == "token_url=DB_PASSWORD=[redacted:password]"


def test_a_name_at_the_start_is_a_name_whatever_ends_the_text() -> None:
    # A URL user is looked for before the name; at offset 0 there is nothing before it.
    assert (
        redact(f"password: {PASSWORD} see https://").text
        == "password: [redacted:password] see https://"
    )


def test_an_unterminated_quoted_value_goes_to_the_end_of_its_line() -> None:
    result = redact(f'password="{PASSWORD}\nnext line')
    assert result.text == 'password="[redacted:password]\nnext line'


def test_a_text_whose_lower_case_changes_length_is_redacted_all_the_same() -> None:
    # "İ" lowers to two characters; the caseless rules then run case-insensitive on the text.
    text = f"İstanbul PASSWORD={PASSWORD} Authorization: BEARER {BEARER}"
    result = redact(text)
    assert [f.kind for f in result.findings] == ["password", "bearer-token"]
    assert [text[f.start : f.end] for f in result.findings] == [PASSWORD, BEARER]
