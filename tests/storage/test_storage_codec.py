"""The blob frame: a header naming the codec, zstd when available and gzip always, and the
refusal of anything damaged."""

from __future__ import annotations

import importlib.util
import os

import pytest

from skillstate.storage import BlobFormatError, default_codec
from skillstate.storage.codec import codec_of, pack, unpack

DATA = os.urandom(2000) + b"repeated text " * 500
HAS_ZSTD = importlib.util.find_spec("zstandard") is not None


def test_the_default_is_zstd_exactly_when_the_module_is_there() -> None:
    assert default_codec() == ("zstd" if HAS_ZSTD else "gzip")


@pytest.mark.parametrize(
    "codec",
    [
        "gzip",
        pytest.param("zstd", marks=pytest.mark.skipif(not HAS_ZSTD, reason="no zstandard")),
    ],
)
def test_each_codec_round_trips_and_names_itself(codec: str) -> None:
    blob = pack(DATA, codec)  # type: ignore[arg-type]
    assert codec_of(blob) == codec
    assert blob[:4] == b"SSAB"
    assert len(blob) < len(DATA)
    assert unpack(blob) == DATA


def test_gzip_blobs_are_deterministic() -> None:
    assert pack(DATA, "gzip") == pack(DATA, "gzip")


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[:10],
        lambda blob: b"XXXX" + blob[4:],
        lambda blob: blob[:4] + b"\x02" + blob[5:],
        lambda blob: blob[:5] + b"q" + blob[6:],
        lambda blob: blob[:-20] + bytes(20),
        lambda blob: blob[:6] + (10).to_bytes(8, "big") + blob[14:],
    ],
)
def test_damaged_blobs_are_refused(damage) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(BlobFormatError):
        unpack(damage(pack(DATA, "gzip")))


def test_codec_of_refuses_what_is_not_a_blob() -> None:
    with pytest.raises(BlobFormatError):
        codec_of(b"plain bytes that are not a blob")


@pytest.mark.skipif(not HAS_ZSTD, reason="no zstandard")
def test_a_zstd_blob_without_the_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = pack(DATA, "zstd")
    monkeypatch.setitem(__import__("sys").modules, "zstandard", None)  # import now fails
    with pytest.raises(BlobFormatError, match="zstandard module is missing"):
        unpack(blob)
