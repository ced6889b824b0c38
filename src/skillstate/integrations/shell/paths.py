"""Where the shell lane may read: the project root, and the one rule every word that names a
file must pass.

Contract. The project root is the host's own project (Claude Code's project directory, Codex's
session directory), resolved, and never the home directory or a folder above it, ``/`` or a
top-level folder, a system folder, or a credentials folder of the home directory: a session
started there gets nothing allowed. A path stays in the project when, resolved from the
command's working directory with every link followed (``..`` and absolute paths included), it
is the root or under it; a path starting with ``~`` never does (the shell would expand it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

_SYSTEM = tuple(
    Path(name)
    for name in [
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/proc",
        "/run",
        "/sbin",
        "/sys",
        "/usr",
        "/var/lib",
        "/var/log",
        "/var/run",
        "/System",
        "/Library",
    ]
)
_CREDENTIALS = frozenset(
    {
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".kube",
        ".docker",
        ".config",
        ".netrc",
        ".password-store",
        ".codex",
        ".claude",
        ".local",
        ".mozilla",
        ".thunderbird",
        ".pki",
        ".cargo",
        ".rustup",
        ".m2",
        ".gradle",
        ".npm",
        ".cache",
    }
)


def root_refusal(root: Path, home: Path) -> str:
    """Why nothing may be allowed with ``root`` (resolved) as the project, or ``""``."""
    if root == home or root in home.parents:
        return f"the project root {root} is the home directory or a folder above it"
    if len(root.parts) <= 2:
        return f"the project root {root} is / or a top-level folder"
    if any(root == system or system in root.parents for system in _SYSTEM):
        return f"the project root {root} is a system folder"
    if home in root.parents and root.relative_to(home).parts[0] in _CREDENTIALS:
        return f"the project root {root} is in a folder of credentials or settings"
    return ""


def outside(candidate: str, cwd: Path, root: Path) -> bool:
    """Whether ``candidate``, read from ``cwd``, leads out of ``root`` (the contract)."""
    if candidate.startswith("~"):
        return True
    try:
        resolved = (cwd / candidate).resolve()
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL: not a path to trust
        return True
    return resolved != root and root not in resolved.parents


def embedded(word: str) -> Iterator[str]:
    """Every reading of ``word`` as a path, for a program whose options are not tabled: the
    word, an ``@file``, an option's ``=value``, a short option's attached value at any
    letter (``-rf/etc/x``), a ``key=value``'s value (``-o cache_dir=/x``) and each part of a
    ``:``-separated list."""
    seen: set[str] = set()
    pending = [word]
    while pending:
        candidate = pending.pop()
        if candidate in seen:
            continue
        seen.add(candidate)
        yield candidate
        if candidate.startswith("@"):
            pending.append(candidate[1:])
        if candidate.startswith("-") and not candidate.startswith("--"):
            pending.extend(candidate[k:] for k in range(2, len(candidate)))
        if "=" in candidate:
            pending.append(candidate.split("=", 1)[1])
        if ":" in candidate:
            pending.extend(candidate.split(":"))
