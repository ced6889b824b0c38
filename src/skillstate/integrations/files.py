"""Changing several files as one transaction: all of them or none.

Each file is written whole to a temporary file beside it, flushed to disk, and renamed over
the old one, so a reader sees the old bytes or the new ones, never half. After the writes
every file is read back and checked (it must hold what was written, and ``check`` must accept
it); if anything fails, every file goes back to the bytes it had, a file that was absent is
removed again, and the folders the transaction created are removed while empty.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skillstate.integrations.model import IntegrationError


@dataclass(frozen=True, slots=True)
class Change:
    """``path`` should hold ``content`` (``None``: be absent). ``mode`` is a new file's
    permissions; ``prune`` are folders to remove, deepest first, if the change leaves them
    empty."""

    path: Path
    content: bytes | None
    mode: int = 0o644
    prune: tuple[Path, ...] = ()


def read(path: Path) -> bytes | None:
    """The file's bytes, or ``None`` when there is no file."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IntegrationError(f"cannot read {path}: {exc.strerror}") from None


def digest(content: bytes | None) -> str | None:
    """The SHA-256 of ``content`` in hex; ``None`` for an absent file."""
    return None if content is None else hashlib.sha256(content).hexdigest()


def missing_folders(path: Path) -> tuple[Path, ...]:
    """The folders above ``path`` that do not exist yet, deepest first."""
    missing: list[Path] = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    return tuple(missing)


def apply(changes: Sequence[Change], check: Callable[[Change], None]) -> None:
    """Make every change, or, when one fails, none: the files end as they were."""
    originals = [(change.path, read(change.path)) for change in changes]
    created: list[Path] = []
    try:
        for change in changes:
            created += missing_folders(change.path)
            _put(change)
        for change in changes:
            if read(change.path) != change.content:
                raise IntegrationError(f"{change.path} does not hold what was written")
            check(change)
    except (OSError, IntegrationError, ValueError) as exc:
        problems = _roll_back(originals, created)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        extra = "" if not problems else "; rolling back failed too: " + "; ".join(problems)
        raise IntegrationError(f"{reason}; every file was put back as it was{extra}") from exc


def _put(change: Change) -> None:
    if change.content is None:
        with contextlib.suppress(FileNotFoundError):
            change.path.unlink()
        for folder in change.prune:
            with contextlib.suppress(OSError):
                folder.rmdir()
        return
    folder = change.path.parent
    if not change.mode & 0o077 and not folder.exists():  # the owner's file: a folder its own
        folder.mkdir(mode=0o700, parents=True)
    folder.mkdir(parents=True, exist_ok=True)
    _write(change.path, change.content, change.mode)


def _write(
    path: Path, content: bytes, mode: int, replace: Callable[[str, Path], None] | None = None
) -> None:
    """Write to a temporary file in the same folder, flush it to disk, rename it over."""
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        (replace or _replace)(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _replace(source: str, target: Path) -> None:
    os.replace(source, target)


def _roll_back(originals: list[tuple[Path, bytes | None]], created: list[Path]) -> list[str]:
    problems: list[str] = []
    for path, original in reversed(originals):
        try:
            if original is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            elif read(path) != original:
                _write(path, original, 0o644, os.replace)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
    for folder in sorted(created, key=lambda folder: len(folder.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()
    return problems
