"""``storage.sealing`` and ``storage.data_key``: a sealed value carries its key's id, opens
only with a key of the ring and only as the record it was sealed for, fails loudly rather
than returning garbage, and leaves a value written before sealing readable; a key file must
be its owner's alone, and a new key goes first."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillstate.storage.data_key import (
    DataKeyError,
    add_key,
    keys_of,
    read_key_file,
    sealer_for,
)
from skillstate.storage.records import opened_object, sealed_object
from skillstate.storage.sealing import MAGIC, Sealer, SealError, identity, key_id, opened

OLD = bytes(range(32))
NEW = bytes(range(1, 33))
RECORD = identity("state", "s1")


@given(st.binary(max_size=4096), st.text(max_size=40))
def test_a_sealed_value_opens_to_what_was_sealed(data: bytes, session: str) -> None:
    sealer = Sealer([NEW])
    record = identity("state", session)
    sealed = sealer.seal(data, record)
    assert sealed[:4] == MAGIC and sealed[4:8].hex() == key_id(NEW) == sealer.key_id
    assert sealer.open(sealed, record) == data


def test_two_seals_of_one_value_differ_and_the_header_names_the_key() -> None:
    sealer = Sealer([NEW, OLD])
    first, second = sealer.seal(b"goal", RECORD), sealer.seal(b"goal", RECORD)
    assert first != second  # a fresh nonce each time
    assert sealer.is_current(first) and not Sealer([OLD, NEW]).is_current(first)
    assert sealer.key_ids == (key_id(NEW), key_id(OLD))


def test_a_key_the_ring_lacks_is_a_clear_error() -> None:
    sealed = Sealer([NEW]).seal(b"secret goal", RECORD)
    with pytest.raises(SealError, match=f"data key {key_id(NEW)}, which is not among"):
        Sealer([OLD]).open(sealed, RECORD)
    assert Sealer([OLD, NEW]).open(sealed, RECORD) == b"secret goal"  # an older key opens


def test_a_value_moved_to_another_record_or_changed_fails_its_check() -> None:
    sealer = Sealer([NEW])
    sealed = sealer.seal(b"alice's goal", identity("state", "alice"))
    with pytest.raises(SealError, match="fails its check"):
        sealer.open(sealed, identity("state", "bob"))
    with pytest.raises(SealError, match="fails its check"):
        sealer.open(sealed, identity("meta", "alice"))
    damaged = bytearray(sealed)
    damaged[-1] ^= 1
    with pytest.raises(SealError, match="fails its check"):
        sealer.open(bytes(damaged), identity("state", "alice"))


def test_identities_do_not_collide_when_names_hold_separators() -> None:
    assert identity("doc", "a\x00b", "c") != identity("doc", "a", "b\x00c")
    assert identity("doc", "ab", "c") != identity("doc", "a", "bc")


def test_a_value_written_before_sealing_reads_as_it_is() -> None:
    sealer = Sealer([NEW])
    assert sealer.open(b'{"goal": "old"}', RECORD) == b'{"goal": "old"}'
    assert opened_object(b'{"goal": "old"}', sealer, "state", "s1") == {"goal": "old"}
    assert sealer.open_text("ran pytest", RECORD) == "ran pytest"
    # A summary that happens to start like a sealed one, but holds none, is plain text too.
    assert sealer.open_text("sealed: the deal", RECORD) == "sealed: the deal"


def test_a_sealed_value_without_a_key_asks_for_one() -> None:
    sealed = sealed_object({"goal": "x"}, 1000, "a state", Sealer([NEW]), "state", "s1")
    with pytest.raises(SealError, match="no data key is configured"):
        opened(sealed, None, RECORD)
    with pytest.raises(SealError, match="no data key is configured"):
        opened_object(sealed, None, "state", "s1")
    assert opened_object(sealed, Sealer([NEW]), "state", "s1") == {"goal": "x"}


def test_text_is_sealed_as_text() -> None:
    sealer = Sealer([NEW])
    sealed = sealer.seal_text("git diff of secrets.py", RECORD)
    assert sealed.startswith("sealed:") and "secrets" not in sealed
    assert sealer.is_current_text(sealed) and not sealer.is_current_text("plain")
    assert sealer.open_text(sealed, RECORD) == "git diff of secrets.py"
    with pytest.raises(SealError):
        Sealer([OLD]).open_text(sealed, RECORD)


def test_a_sealer_refuses_keys_of_the_wrong_size_and_an_empty_ring() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Sealer([b"short"])
    with pytest.raises(ValueError, match="at least one"):
        Sealer([])


# The key's places -----------------------------------------------------------------------------


def _b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_keys_are_read_newest_first_from_text(tmp_path: Path) -> None:
    assert keys_of(f"# made today\n{_b64(NEW)}\n\n{_b64(OLD)}  # the old one\n", "f") == [
        NEW,
        OLD,
    ]
    assert keys_of(f"{_b64(NEW)},{_b64(OLD)}", "env") == [NEW, OLD]
    with pytest.raises(DataKeyError, match="holds no data key"):
        keys_of("# nothing\n", "f")
    with pytest.raises(DataKeyError, match="key 2 is not base64 of 32 bytes"):
        keys_of(f"{_b64(NEW)} {_b64(b'short')}", "f")


def test_a_key_file_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "data.key"
    path.write_text(_b64(NEW) + "\n")
    os.chmod(path, 0o640)
    with pytest.raises(DataKeyError, match=r"may be read by others \(mode 0640\)"):
        read_key_file(path)
    with pytest.raises(DataKeyError, match=r"may be read by others"):
        add_key(path)
    os.chmod(path, 0o600)
    assert read_key_file(path) == [NEW]
    with pytest.raises(DataKeyError, match="No such file"):
        read_key_file(tmp_path / "missing.key")


def test_a_new_key_goes_first_in_an_owner_only_file(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "data.key"
    first = add_key(path)
    assert path.stat().st_mode & 0o777 == 0o600
    second = add_key(path)
    keys = read_key_file(path)
    assert [key_id(key) for key in keys] == [second, first]
    sealer = sealer_for(path, None)
    assert sealer is not None and sealer.key_id == second and sealer.key_ids[1] == first


def test_the_sealer_comes_from_one_place_or_none(tmp_path: Path) -> None:
    assert sealer_for(None, None) is None
    env = sealer_for(None, _b64(NEW))
    assert env is not None and env.key_id == key_id(NEW)
    path = tmp_path / "data.key"
    add_key(path)
    with pytest.raises(DataKeyError, match="both set"):
        sealer_for(path, _b64(NEW))
