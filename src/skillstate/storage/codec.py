"""The framing of one archive blob file: a header that names its compression, then the
compressed bytes.

Header (14 bytes): the magic ``SSAB``, the format version ``1``, the codec (``z`` for zstd,
``g`` for gzip), and the uncompressed length as an unsigned 64-bit big-endian integer, which
bounds decompression and checks it. zstd is used when the ``zstandard`` module can be
imported; gzip (standard library) otherwise. A blob names its codec, so a store that moves to
another machine still reads what it wrote, provided that machine has the codec.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import struct
import zlib
from typing import Any, Literal

Codec = Literal["zstd", "gzip"]

_MAGIC = b"SSAB"
_VERSION = 1
_HEADER = struct.Struct(">4sBcQ")
_CODES: dict[str, bytes] = {"zstd": b"z", "gzip": b"g"}
_NAMES: dict[bytes, Codec] = {b"z": "zstd", b"g": "gzip"}


class BlobFormatError(ValueError):
    """Bytes that are not a blob this format can read."""


def default_codec() -> Codec:
    """zstd when the ``zstandard`` module is importable, else gzip."""
    return "zstd" if importlib.util.find_spec("zstandard") is not None else "gzip"


def pack(data: bytes, codec: Codec) -> bytes:
    if codec == "zstd":
        body: bytes = _zstandard().ZstdCompressor(level=3).compress(data)
    else:
        body = gzip.compress(data, compresslevel=6, mtime=0)
    return _HEADER.pack(_MAGIC, _VERSION, _CODES[codec], len(data)) + body


def unpack(blob: bytes) -> bytes:
    if len(blob) < _HEADER.size:
        raise BlobFormatError("too short for a blob header")
    magic, version, code, size = _HEADER.unpack_from(blob)
    if magic != _MAGIC or version != _VERSION or code not in _NAMES:
        raise BlobFormatError("not a skillstate archive blob")
    body = blob[_HEADER.size :]
    try:
        if _NAMES[code] == "zstd":
            data: bytes = _zstandard().ZstdDecompressor().decompress(body, max_output_size=size)
        else:  # wbits 31: a gzip stream; at most one byte past the size, to detect a lie
            data = zlib.decompressobj(wbits=31).decompress(body, size + 1)
    except ImportError:
        raise BlobFormatError("a zstd blob, and the zstandard module is missing") from None
    except Exception as error:  # each codec raises its own error type for damaged input
        raise BlobFormatError(f"damaged blob: {error}") from None
    if len(data) != size:
        raise BlobFormatError(f"damaged blob: {len(data)} bytes where the header says {size}")
    return data


def codec_of(blob: bytes) -> Codec:
    """The codec named in a blob's header."""
    if len(blob) < _HEADER.size or blob[:4] != _MAGIC or blob[5:6] not in _NAMES:
        raise BlobFormatError("not a skillstate archive blob")
    return _NAMES[blob[5:6]]


def _zstandard() -> Any:
    # Imported by name: the module is optional, so its absence is a runtime fact, not a type
    # error, and importing it costs nothing until a blob needs it.
    return importlib.import_module("zstandard")
