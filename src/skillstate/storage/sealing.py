"""Sealing records at rest: AES-256-GCM under the data key, with the key's id on each record.

Contract (changing it makes every sealed record unreadable):

* A sealed value is ``SSE1`` (4 bytes), the key id (4 bytes: the first four of the key's
  SHA-256), a random 12-byte nonce, then AES-GCM's ciphertext and 16-byte tag.
* The associated data is the header (magic and key id) followed by the record's identity
  (``identity``: its kind and the names that find it, e.g. ``("state", session)``), so a value
  copied into another record, another session's or another kind's, fails its check instead of
  being read there.
* Bytes that do not start with ``SSE1`` were written before sealing was turned on (a Σ is a
  JSON object, ``{...``; a blob starts ``SSAB``): they are read as they are, and sealed on
  their next write or by ``skillstate keys rotate-data``.
* A text column (an archive entry's summary) holds ``sealed:`` and the sealed bytes in
  base64 (``seal_text``); any other text (one that is not valid base64 of a sealed value
  after the prefix) is a summary written before sealing.

A ``Sealer`` holds a key ring, newest first: the newest key seals, any of them opens. A value
under a key the ring lacks, or one that fails its check, raises ``SealError`` and never
returns garbage. The module does no I/O: ``storage.data_key`` reads keys from where they live.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KEY_BYTES", "MAGIC", "SealError", "Sealer", "identity", "key_id", "opened"]

MAGIC = b"SSE1"
KEY_BYTES = 32
_ID_BYTES = 4
_NONCE_BYTES = 12
_HEADER_BYTES = len(MAGIC) + _ID_BYTES
TEXT_PREFIX = "sealed:"


class SealError(ValueError):
    """A sealed value that cannot be opened: under a key the ring lacks, tampered with, moved
    from another record, or found where no data key is configured."""


def key_id(key: bytes) -> str:
    """A key's id as records carry it: the first 8 hex digits of its SHA-256."""
    return hashlib.sha256(key).digest()[:_ID_BYTES].hex()


def identity(kind: str, *names: str) -> bytes:
    """A record's identity, bound into its seal: each part length-prefixed, so that no two
    different identities give the same bytes (a session id may hold any character)."""
    out = bytearray()
    for part in (kind, *names):
        raw = part.encode("utf-8", "surrogatepass")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


class Sealer:
    """AES-GCM over a key ring: ``keys[0]`` seals, any of ``keys`` opens."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        # Imported here: the stores import this module, and most runs seal nothing.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if not keys:
            raise ValueError("a sealer needs at least one data key")
        self._ciphers: dict[bytes, AESGCM] = {}
        for key in keys:
            if len(key) != KEY_BYTES:
                raise ValueError(f"a data key is {KEY_BYTES} bytes, not {len(key)}")
            self._ciphers.setdefault(bytes.fromhex(key_id(key)), AESGCM(key))
        self._current = bytes.fromhex(key_id(keys[0]))
        self._seal_with = self._ciphers[self._current]

    @property
    def key_id(self) -> str:
        """The id of the key that seals."""
        return self._current.hex()

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The ids of every key that opens, the sealing one first."""
        return tuple(found.hex() for found in self._ciphers)

    def seal(self, data: bytes, record: bytes) -> bytes:
        """``data`` sealed under the current key, bound to ``record`` (``identity``)."""
        header = MAGIC + self._current
        nonce = os.urandom(_NONCE_BYTES)
        return header + nonce + self._seal_with.encrypt(nonce, data, header + record)

    def open(self, data: bytes, record: bytes) -> bytes:
        """The plaintext of ``data`` sealed for ``record``; ``data`` itself where it was never
        sealed. ``SealError`` for a key the ring lacks or a failed check."""
        if data[:4] != MAGIC:
            return data
        header = data[:_HEADER_BYTES]
        cipher = self._ciphers.get(header[len(MAGIC) :])
        if cipher is None:
            raise SealError(
                f"a record is sealed under data key {header[len(MAGIC) :].hex()}, which is not"
                f" among the keys given ({', '.join(self.key_ids)})"
            )
        from cryptography.exceptions import InvalidTag

        nonce = data[_HEADER_BYTES : _HEADER_BYTES + _NONCE_BYTES]
        try:
            return cipher.decrypt(nonce, data[_HEADER_BYTES + _NONCE_BYTES :], header + record)
        except InvalidTag:
            raise SealError(
                "a sealed record fails its check: damaged, tampered with, or moved from"
                " another record"
            ) from None

    def is_current(self, data: bytes) -> bool:
        """Whether ``data`` is sealed under the current key (rotation leaves it as it is)."""
        return data[:4] == MAGIC and data[len(MAGIC) : _HEADER_BYTES] == self._current

    def seal_text(self, text: str, record: bytes) -> str:
        """``text`` sealed, as text: ``sealed:`` and the sealed bytes in base64."""
        sealed = self.seal(text.encode("utf-8", "surrogatepass"), record)
        return TEXT_PREFIX + base64.b64encode(sealed).decode("ascii")

    def open_text(self, text: str, record: bytes) -> str:
        """The plaintext of ``seal_text``'s ``text``; other text as it is."""
        raw = _sealed_bytes(text)
        return text if raw is None else self.open(raw, record).decode("utf-8", "surrogatepass")

    def is_current_text(self, text: str) -> bool:
        raw = _sealed_bytes(text)
        return raw is not None and self.is_current(raw)


def _sealed_bytes(text: str) -> bytes | None:
    """The sealed bytes ``text`` holds; None for a text that is not ``seal_text``'s (one
    written before sealing that happens to start ``sealed:`` included)."""
    if not text.startswith(TEXT_PREFIX):
        return None
    try:
        raw = base64.b64decode(text[len(TEXT_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if raw[:4] == MAGIC and len(raw) > _HEADER_BYTES + _NONCE_BYTES else None


def opened(data: bytes, sealer: Sealer | None, record: bytes) -> bytes:
    """``data`` opened by ``sealer``; with no sealer, ``data`` itself, unless it is sealed:
    then ``SealError`` says a data key is needed (rather than a JSON or blob error later)."""
    if sealer is not None:
        return sealer.open(data, record)
    if data[:4] == MAGIC:
        raise SealError(
            "a record is sealed and no data key is configured (data_key_file or"
            " SKILLSTATE_DATA_KEY)"
        )
    return data


def opened_text(text: str, sealer: Sealer | None, record: bytes) -> str:
    """``opened`` for a text column."""
    if sealer is not None:
        return sealer.open_text(text, record)
    if text.startswith(TEXT_PREFIX) and _sealed_bytes(text) is not None:
        raise SealError(
            "a record is sealed and no data key is configured (data_key_file or"
            " SKILLSTATE_DATA_KEY)"
        )
    return text
