"""What git reads that could make it run a program, and how ``skillstate shell`` runs git so
that it does not.

Contract. The allowed git uses (status, log, diff, show, with the options of their tables) read
the repository only, but git's config can name programs that they run: a filter driver on a
changed file, a textconv or external diff driver, an fsmonitor hook, gpg to verify signatures,
a promisor remote fetched from on a missing object, a work tree elsewhere. So:

* ``environment`` confines git to a repository at or under the project root (no repository
  above it is found) and turns off what can be turned off from outside: optional index writes,
  the pager, terminal prompts, lazy fetches, an external diff from the environment;
* ``hardened`` adds, for the run, ``-c`` settings that win over every config file
  (``core.fsmonitor=false``, ``log.showSignature=false``) and ``--no-ext-diff --no-textconv
  --ignore-submodules=all`` where the use takes them;
* ``repository_refusal`` refuses a repository whose own config (local or worktree scope: the
  files inside the project, which the model may have written) names a program through a key
  that cannot be turned off from outside (filters, gpg programs, diff drivers, promisor
  remotes, ``core.worktree``). The user's own global config is the user's.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

_PROGRAM_KEYS = re.compile(
    r"filter\..+\.(clean|smudge|process)|gpg\.(.+\.)?program|diff\.external"
    r"|diff\..+\.(textconv|command)|extensions\.partialclone|remote\..+\.promisor"
    r"|core\.worktree"
)
_OWN_SCOPES = frozenset({"local", "worktree"})
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_EXTERNAL_DIFF", "GIT_CONFIG_PARAMETERS")
_SETTINGS = ("-c", "core.fsmonitor=false", "-c", "log.showSignature=false")
_QUIET_DRIVERS = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
    "status": ("--ignore-submodules=all",),
}


def environment(base: Mapping[str, str], root: Path) -> dict[str, str]:
    """The environment git runs in (the contract)."""
    env = {key: value for key, value in base.items() if key not in _DROPPED}
    env.update(
        GIT_CEILING_DIRECTORIES=str(root.parent),
        GIT_OPTIONAL_LOCKS="0",
        GIT_PAGER="cat",
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_LAZY_FETCH="1",
    )
    return env


def hardened(argv: Sequence[str], start: int) -> list[str]:
    """``argv`` (a git use whose own arguments start at ``start``) as ``skillstate shell``
    runs it."""
    use = argv[start - 1]
    return [argv[0], *_SETTINGS, *argv[1:start], *_QUIET_DRIVERS.get(use, ()), *argv[start:]]


def repository_refusal(cwd: Path, root: Path, base: Mapping[str, str]) -> str:
    """Why git may not run in ``cwd``'s repository, or ``""`` (no repository: git says so)."""
    try:
        done = subprocess.run(
            ["git", "config", "--list", "--show-scope", "-z"],
            cwd=cwd,
            env=environment(base, root),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"git's config could not be read ({error})"
    if done.returncode != 0:
        return ""
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0].lower()
        if scope in _OWN_SCOPES and _PROGRAM_KEYS.fullmatch(key):
            return f"the repository's own config sets {key}, which makes git run a program"
    return ""
