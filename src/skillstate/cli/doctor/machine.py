"""The checks of this machine: the data directory's permissions, and which agent CLIs are on
``PATH`` with their versions."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from skillstate.cli.doctor.check import Check

CLIS = ("codex", "opencode", "claude")
"""The agent CLIs ``skillstate integrate`` knows, by program name."""

VERSION_TIMEOUT_S = 5.0
_OWNER_ONLY = 0o077
"""The group and other permission bits: none may be set on the data directory or its files."""


def check_data_dir(path: Path) -> Check:
    """The data directory exists (or can be made), is this user's, owner-only (0700 for
    folders, 0600 for files) and writable. Not existing yet is fine: the gateway makes it."""
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not os.access(parent, os.W_OK):
            return Check("data dir", False, f"{path} cannot be made here", f"mkdir -m 700 {path}")
        return Check("data dir", None, f"{path} does not exist yet; the gateway makes it")
    if not path.is_dir():
        return Check("data dir", False, f"{path} is not a directory", f"rm {path}")
    info = path.stat()
    if info.st_uid != os.getuid():
        return Check("data dir", False, f"{path} belongs to another user", f"chown -R $USER {path}")
    if not os.access(path, os.W_OK | os.X_OK):
        return Check("data dir", False, f"{path} is not writable", f"chmod 700 {path}")
    if info.st_mode & _OWNER_ONLY:
        mode = f"{stat.S_IMODE(info.st_mode):o}"
        return Check("data dir", False, f"{path} is mode {mode}, not 700", f"chmod 700 {path}")
    open_items = _open_items(path)
    if open_items:
        detail = f"{len(open_items)} item(s) others can read, e.g. {open_items[0]}"
        return Check("data dir", False, detail, f"chmod -R go-rwx {path}")
    return Check("data dir", True, f"{path} (owner-only)")


def _open_items(path: Path) -> list[Path]:
    """Files and folders under ``path`` with any group or other permission bit."""
    found = []
    for folder, names, files in os.walk(path):
        for name in [*names, *files]:
            item = Path(folder) / name
            try:
                mode = item.lstat().st_mode
            except OSError:
                continue
            if not stat.S_ISLNK(mode) and mode & _OWNER_ONLY:
                found.append(item)
    return found


async def check_clis(
    names: Sequence[str] = CLIS, environ: Mapping[str, str] | None = None
) -> list[Check]:
    """One check per CLI: its path and version, or information that it is not on ``PATH``
    (a CLI not installed is a choice, not a problem)."""
    path = (os.environ if environ is None else environ).get("PATH", "")
    return list(await asyncio.gather(*(check_cli(name, path) for name in names)))


async def check_cli(name: str, search_path: str) -> Check:
    program = shutil.which(name, path=search_path)
    if program is None:
        return Check(f"cli {name}", None, "not on PATH")
    version = await _version(program)
    return Check(f"cli {name}", True, f"{version} ({program})")


async def _version(program: str) -> str:
    """The first line ``program --version`` prints, or why there is none."""
    try:
        process = await asyncio.create_subprocess_exec(
            program,
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    except OSError as exc:
        return f"cannot run: {exc.strerror or exc}"
    try:
        output, _ = await asyncio.wait_for(process.communicate(), VERSION_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return f"--version did not answer in {VERSION_TIMEOUT_S:g}s"
    lines = output.decode(errors="replace").strip().splitlines()
    return lines[0].strip() if lines else "version unknown"
