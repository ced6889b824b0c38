"""Files and paths on disk, with no import of the gateway's: where a path a user wrote points
(``resolve_path``), owner-only folders (``private_dir``), and a file written whole or not at all
(``write_durably``). The gateway's blob store and the shell lane's direct archive write share
them, as do the settings and the shell's own small settings reader."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_path(text: str, base: Path, home: Path) -> Path:
    """An absolute path: ``~`` is the home directory, a relative path is relative to ``base``.
    ``ValueError`` says what is wrong (empty, an unknown user)."""
    if not text:
        raise ValueError("is empty")
    path = Path(text)
    if path.parts[:1] == ("~",):
        path = home.joinpath(*path.parts[1:])
    elif text.startswith("~"):
        try:
            path = path.expanduser()
        except RuntimeError:
            raise ValueError(f"names an unknown user ({path.parts[0]})") from None
    return path if path.is_absolute() else base / path


def private_dir(path: Path) -> None:
    """``path`` and missing parents, owner-only; an existing directory of ours is tightened."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def write_durably(path: Path, data: bytes, mtime: float) -> None:
    """``data`` at ``path`` (owner-only, modified at ``mtime``), whole or not at all: a
    temporary file beside it, synced, renamed over it, then the folder synced. The folder must
    exist."""
    import contextlib  # here: the shell lane's settings reader starts without them
    import tempfile

    # mkstemp creates the file 0600, whatever the umask.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.utime(temporary, (mtime, mtime))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
