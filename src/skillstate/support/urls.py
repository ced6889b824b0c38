"""URLs as they may be shown: in logs, ``/health``, ``skillstate config`` and ``doctor``."""

from __future__ import annotations


def shown_url(url: str) -> str:
    """``url`` with any password in it masked, for showing."""
    head, at, tail = url.rpartition("@")
    if not at or "://" not in head:
        return url
    scheme, _, credentials = head.partition("://")
    user, colon, _ = credentials.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{tail}"
