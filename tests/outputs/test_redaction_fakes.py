"""Fake secrets for the redaction tests, built from pieces so that no key-shaped literal sits in
the test sources (the fixture corpus in tests/fixtures/secrets/ is the one place that holds
whole ones)."""

from __future__ import annotations


def fill(length: int, pattern: str = "Fa1k3") -> str:
    """``pattern`` repeated to exactly ``length`` characters."""
    return (pattern * (length // len(pattern) + 1))[:length]


OPENAI_PROJECT = "sk-" + "proj-" + fill(48, "Ab3dE_f9-") + fill(20)
OPENAI_LEGACY = "sk-" + "a" * 40
ANTHROPIC = "sk-" + "ant-" + "api03-" + fill(86, "Zq7_xY-") + "AA"
GITHUB = {
    prefix: prefix + "_" + fill(36, "Gh9Tk") for prefix in ("ghp", "gho", "ghu", "ghs", "ghr")
}
GITHUB_PAT = "github_" + "pat_" + "11" + fill(20, "PAT0") + "_" + fill(59, "x8Yz")
AWS_KEY_ID = "AK" + "IA" + fill(16, "Q7ZW3")
AWS_SESSION_KEY_ID = "AS" + "IA" + fill(16, "B2XR9")
AWS_SECRET = fill(40, "aW5/+bQ")
SLACK = "xox" + "b-" + "1234567890" + "-" + "9876543210" + "-" + fill(24, "Sl4ck")
GOOGLE = "AI" + "za" + fill(35, "Go0_g-")
STRIPE_LIVE = "sk_" + "live_" + fill(24, "St5rp")
STRIPE_RESTRICTED = "rk_" + "live_" + fill(24, "Rk6rs")
JWT = (
    "ey" + "J" + fill(33, "hbG1c") + "." + "ey" + "J" + fill(40, "zdW2x") + "." + fill(43, "Sg_-q8")
)
BEARER = fill(32, "Br3ar")
BASIC = fill(20, "dXNlcjpw") + "=="
PASSWORD = "Hun7er2-" + fill(8, "pQ")
PEM_BODY = "\n".join(fill(64, f"MII{n}kQ+/") for n in range(4))
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----"
