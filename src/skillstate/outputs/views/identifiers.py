"""The identifier sidecar: exact identifiers of an original that its view does not show.

What counts as an identifier, conservatively (missing a word is better than flooding the
sidecar with English):

* file paths: a token with a known extension (``app.py``), or with a ``/`` that starts like a
  path (``/``, ``./``, ``../``, ``~/``) or has two or more of them (``src/lib/x``);
* location references: a path followed by ``:line`` or ``:line:col``, and pytest node ids
  (``tests/test_x.py::test_y``); the bare path is kept too;
* URLs (``http://``, ``https://``);
* UUIDs, sha256 digests (64 hex, with or without ``sha256:``), git hashes (7 to 40 lowercase
  hex holding a digit and a letter);
* error codes: ``E0425``, ``TS2345``, ``F401``, ``ERR_SOMETHING`` and errno names (``ENOENT``);
* HTTP statuses right after the word ``status`` or ``HTTP`` (kept with that word);
* version numbers with three parts (``1.2.3``, ``v2.0.1-rc.1``).

Tokens are cut at whitespace, quotes, brackets and separators, and each is tested with
anchored patterns of single character classes, so the scan is linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from skillstate.outputs.views.text import words

MAX_ENTRIES = 200
"""The sidecar holds at most this many identifiers."""
MAX_CHARS = 4000
"""... and at most this many characters of them."""
_MAX_TOKEN = 400  # longer tokens are data (base64, minified code), not identifiers

_TOKEN = re.compile(r"[^\s\"'`,;()\[\]{}<>|=*]+")
_URL_END = re.compile(r"[^\s\"'`<>\[\]{}|\\^]*")
_PATH = re.compile(r"[A-Za-z0-9_.\-/~@+]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SHA256 = re.compile(r"(?:sha256:)?[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]{7,40}")
_CODE = re.compile(r"[A-Z]{1,4}[0-9]{3,5}|ERR_[A-Z0-9_]+")
_VERSION = re.compile(r"v?[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.\-]+)?")
_STATUS = re.compile(r"[1-5][0-9][0-9]")
_NODE_REST = re.compile(r"[A-Za-z0-9_.:\-]+")
_ERRNO = words(
    "ENOENT EACCES EEXIST EPERM ENOTDIR EISDIR ENOTEMPTY EBUSY EAGAIN EINVAL ENOSPC EMFILE "
    "ENOMEM EPIPE EIO ECONNREFUSED ECONNRESET ECONNABORTED ETIMEDOUT EADDRINUSE "
    "EHOSTUNREACH ENETUNREACH ENOTFOUND EAI_AGAIN ENOEXEC ELOOP EROFS EXDEV ESRCH ECHILD"
)
_EXTENSIONS = words(
    "py pyi js mjs cjs jsx ts tsx vue svelte rs go java kt kts scala swift c h cc cpp cxx "
    "hpp cs fs rb php pl lua sh bash zsh ps1 sql json jsonl yaml yml toml ini cfg conf env "
    "xml html htm css scss less md rst txt csv tsv log lock proto graphql gradle make mk "
    "dockerfile tf ex exs erl hs ml clj dart r jl zig nim so dll dylib a o wasm whl gz tgz "
    "zip tar"
)
_Hit = tuple[int, str]  # where an identifier starts in the text, and the identifier
_PATH_STARTS = ("/", "./", "../", "~/")
_STATUS_WORDS = frozenset({"status", "http", "status:", "http:", "status_code", "statuscode"})


def find(text: str) -> list[str]:
    """The identifiers of ``text`` in order of first appearance, each once."""
    found = sorted(_urls(text), key=lambda hit: hit[0])
    found += _token_hits(text)
    found.sort(key=lambda hit: hit[0])  # stable: hits at one place keep their order
    return list(dict.fromkeys(ident for _, ident in found))


def sidecar(original: Iterable[str], body: str) -> tuple[str, ...]:
    """The identifiers that ``body`` does not contain, capped: first those that are not line
    references, then the references (a folded run of log lines can hold hundreds of them,
    which would crowd out the paths, hashes and codes), each in ``find``'s order."""
    found = list(original)
    kept: list[str] = []
    room = MAX_CHARS
    for references in (False, True):
        room = _take(found, body, references, kept, room)
    return tuple(kept)


def _take(found: list[str], body: str, references: bool, kept: list[str], room: int) -> int:
    """Append to ``kept`` the missing identifiers of one class while the caps allow; the room
    left. It stops at the cap, so a text of countless identifiers costs no more than a few."""
    for ident in found:
        if is_reference(ident) != references or ident in body:
            continue
        room -= len(ident) + 2
        if len(kept) >= MAX_ENTRIES or room < 0:
            return -1
        kept.append(ident)
    return room


def _urls(text: str) -> Iterator[_Hit]:
    for scheme in ("http://", "https://"):
        start = text.find(scheme)
        while start >= 0:
            match = _URL_END.match(text, start + len(scheme))
            end = match.end() if match else start + len(scheme)
            url = text[start:end].rstrip(".,;:!?)'\"")
            if len(url) > len(scheme) and len(url) <= _MAX_TOKEN:
                yield start, url
            start = text.find(scheme, end)


def _token_hits(text: str) -> list[_Hit]:
    hits: list[_Hit] = []
    last = second = (0, "")  # the two tokens before this one, for HTTP statuses
    known: dict[str, list[str]] = {}  # logs repeat their tokens: classify each once
    for match in _TOKEN.finditer(text):
        raw = match.group()
        token = raw.rstrip(".:!?").lstrip(":") if len(raw) <= _MAX_TOKEN else ""
        # a plain word can only be an errno name, a number only a status (or a digest): most
        # tokens of a text end here
        if token and (not token.isdigit() or len(token) == 64):  # 64 digits: a sha256
            if (not token.isalpha() or token in _ERRNO) and "://" not in token:
                start = match.start() + raw.find(token)
                found = known.get(token)
                if found is None:
                    found = known[token] = classify(token)
                hits.extend((start, ident) for ident in found)
        elif len(token) == 3 and _STATUS.fullmatch(token):
            start = match.start() + raw.find(token)
            hits.extend(_status(text, [second, last], start, token))
        second, last = last, (match.start(), raw.lower())
    return hits


def _status(text: str, before: list[tuple[int, str]], start: int, code: str) -> list[_Hit]:
    """``status 404``, ``HTTP 503``, ``HTTP/1.1 500``: the word and the code, exactly."""
    for word_start, word in reversed(before):
        if word in {":", "="}:
            continue
        if word in _STATUS_WORDS or word.startswith("http/"):
            gap = text[word_start + len(word) : start]
            if len(gap) <= 2 and not gap.strip(" :"):
                return [(word_start, text[word_start : start + len(code)])]
        break
    return []


def classify(token: str) -> list[str]:
    """The identifiers one token stands for: none, itself, or a reference and its path."""
    if _UUID.fullmatch(token) or _SHA256.fullmatch(token) or _is_hash(token):
        return [token]
    if _CODE.fullmatch(token) or token in _ERRNO or _VERSION.fullmatch(token):
        return [token]
    if "::" in token:
        path, _, rest = token.partition("::")
        return [path, token] if _is_path(path) and _NODE_REST.fullmatch(rest) else []
    path = _strip_location(token)
    if path != token:
        return [path, token] if _is_path(path) else []
    return [token] if _is_path(token) else []


def is_reference(ident: str) -> bool:
    """Whether an identifier is a location in a file (``a.py:12:5``, ``a.py::test_x``)."""
    return "::" in ident or _strip_location(ident) != ident


def _is_hash(token: str) -> bool:
    if not _HEX.fullmatch(token):
        return False
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _strip_location(token: str) -> str:
    """``token`` less a ``:line`` or ``:line:col`` ending."""
    path = token
    for _ in range(2):
        head, colon, tail = path.rpartition(":")
        if not colon or not tail.isdigit() or not tail.isascii():
            break
        path = head
    return path


def _is_path(token: str) -> bool:
    if len(token) < 3 or not _PATH.fullmatch(token) or not any(c.isalpha() for c in token):
        return False
    name = token.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    if dot and stem and ext.lower() in _EXTENSIONS:
        return True
    return "/" in token and (token.startswith(_PATH_STARTS) or token.count("/") >= 2)
