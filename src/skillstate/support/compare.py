"""Comparing a secret a request carries with the one expected."""

from __future__ import annotations

import hashlib
import hmac


def same_secret(given: str, secret: str) -> bool:
    """Constant time in the content and, hashed first, in the length of what was sent."""
    sent = hashlib.sha256(given.encode("utf-8", "surrogateescape")).digest()
    return hmac.compare_digest(sent, hashlib.sha256(secret.encode()).digest())
