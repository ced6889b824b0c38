"""The data key: where it lives, how it is read, and how a new one is made.

A key is 32 random bytes, written as base64 (44 characters). It lives in one of two places,
set by the settings: a file (``data_key_file``) that only its owner may read (mode 0600 or
stricter: a file the group or others may read is refused, as ssh refuses such a private key),
or the environment (``SKILLSTATE_DATA_KEY``, the setting ``data_key``). Either holds a key
ring: one key a line in the file (blank lines and ``#`` comments skipped), keys separated by
commas or spaces in the environment; the first seals, the others only open what they sealed
(``sealing.Sealer``). ``add_key`` puts a new key first in the file, making it owner-only when
it is missing: the key rotation's first step (docs in SECURITY.md).

Losing every key of the ring loses what was sealed: there is no other way back to it.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from pathlib import Path

from skillstate.storage.sealing import KEY_BYTES, Sealer, key_id

__all__ = ["DataKeyError", "add_key", "keys_of", "read_key_file", "sealer_for"]

_SEPARATORS = re.compile(r"[,\s]+")


class DataKeyError(ValueError):
    """A data key that cannot be used: its file missing, open to others or malformed."""


def keys_of(text: str, where: str) -> list[bytes]:
    """The keys ``text`` holds, newest first; ``where`` names it in errors."""
    lines = (line.split("#", 1)[0] for line in text.splitlines())
    words = [word for line in lines for word in _SEPARATORS.split(line) if word]
    if not words:
        raise DataKeyError(f"{where} holds no data key")
    keys = []
    for number, word in enumerate(words, 1):
        try:
            key = base64.b64decode(word, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != KEY_BYTES:
            raise DataKeyError(
                f"{where}: key {number} is not base64 of {KEY_BYTES} bytes"
                " (`skillstate keys data-key` makes one)"
            )
        keys.append(key)
    return keys


def read_key_file(path: Path) -> list[bytes]:
    """The keys in the file at ``path``, refused unless only its owner may read it."""
    try:
        with path.open("rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            raw = handle.read()
    except OSError as error:
        raise DataKeyError(f"data_key_file {path}: {error.strerror or error}") from None
    if stat.S_IMODE(mode) & 0o077:
        raise DataKeyError(
            f"data_key_file {path} may be read by others (mode {stat.S_IMODE(mode):04o}):"
            f" `chmod 600 {path}`"
        )
    return keys_of(raw.decode("ascii", "replace"), f"data_key_file {path}")


def sealer_for(key_file: Path | None, key_text: str | None) -> Sealer | None:
    """The sealer of the configured key ring; None when neither place is set (encryption off).
    Both set is refused: which one seals would be a guess."""
    if key_file is not None and key_text is not None:
        raise DataKeyError("data_key_file and SKILLSTATE_DATA_KEY are both set: keep one")
    if key_file is not None:
        return Sealer(read_key_file(key_file))
    if key_text is not None:
        return Sealer(keys_of(key_text, "SKILLSTATE_DATA_KEY"))
    return None


def add_key(path: Path) -> str:
    """A new random key, first in the file at ``path`` (made owner-only where missing; one
    open to others is refused, as reading it would be); the new key's id."""
    key = os.urandom(KEY_BYTES)
    kept = read_key_file(path) if path.exists() else []
    lines = [base64.b64encode(each).decode("ascii") for each in (key, *kept)]
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.new")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(handle, 0o600)
        os.write(handle, ("\n".join(lines) + "\n").encode("ascii"))
        os.fsync(handle)
    finally:
        os.close(handle)
    os.replace(temporary, path)
    return key_id(key)
