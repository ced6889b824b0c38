"""What git reads that could make it run a program, and how ``skillstate shell`` runs git so
that it does not.

Contract. The allowed git uses (status, log, diff, show, with the options of their tables) read
the repository only, but git's config can name programs that they run: a filter driver on a
changed file, a textconv or external diff driver, an fsmonitor hook, gpg to verify signatures,
a promisor remote fetched from on a missing object, a hook on an index write, a work tree or
repository elsewhere. So:

* ``environment`` confines git to a repository at or under the project root (no repository
  above it is found) and turns off what can be turned off from outside: optional index writes,
  the pager, terminal prompts, lazy fetches, an external diff from the environment;
  It also carries settings that win over every config file, as ``-c`` would
  (``GIT_CONFIG_COUNT``): ``core.fsmonitor=false``, ``log.showSignature=false``,
  ``core.hooksPath=/dev/null``, ``diff.submodule=short`` (no git run inside a submodule, whose
  config is not checked);
* ``hardened`` adds ``--no-ext-diff --no-textconv --ignore-submodules=all`` where the use
  takes them;
* ``private_index`` gives the run a copy of the index: ``git diff`` refreshes the stat data of
  the index it reads and writes it back whatever ``GIT_OPTIONAL_LOCKS`` says;
* ``repository_refusal`` refuses a repository whose own config (local or worktree scope: the
  files inside the project, which the model may have written) names a program through a key
  that cannot be turned off from outside (filters, gpg programs, diff drivers, promisor
  remotes, ``core.worktree``, pretty formats that may verify signatures), or whose git
  directory lies outside the project root (a ``.git`` file or link naming another one). The
  user's own global config is the user's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

_PROGRAM_KEYS = re.compile(
    r"filter\..+\.(clean|smudge|process)|gpg\.(.+\.)?program|diff\.external"
    r"|diff\..+\.(textconv|command)|extensions\.partialclone|remote\..+\.promisor"
    r"|core\.worktree|pretty\..+|format\.pretty"
)
_OWN_SCOPES = frozenset({"local", "worktree"})
_DROPPED = re.compile(
    r"GIT_DIR|GIT_WORK_TREE|GIT_INDEX_FILE|GIT_EXTERNAL_DIFF|GIT_CONFIG_PARAMETERS"
    r"|GIT_CONFIG_COUNT|GIT_CONFIG_KEY_\d+|GIT_CONFIG_VALUE_\d+"
)
_SETTINGS = {
    "core.fsmonitor": "false",
    "log.showSignature": "false",
    "core.hooksPath": "/dev/null",
    "diff.submodule": "short",
}
_QUIET_DRIVERS = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
    "status": ("--ignore-submodules=all",),
}


def environment(base: Mapping[str, str], root: Path) -> dict[str, str]:
    """The environment git runs in (the contract)."""
    env = {key: value for key, value in base.items() if not _DROPPED.fullmatch(key)}
    for number, (key, value) in enumerate(_SETTINGS.items()):
        env[f"GIT_CONFIG_KEY_{number}"], env[f"GIT_CONFIG_VALUE_{number}"] = key, value
    env.update(
        GIT_CONFIG_COUNT=str(len(_SETTINGS)),
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
    return [*argv[:start], *_QUIET_DRIVERS.get(use, ()), *argv[start:]]


def repository_refusal(cwd: Path, root: Path, base: Mapping[str, str]) -> str:
    """Why git may not run in ``cwd``'s repository, or ``""`` (no repository: git says so)."""
    env = environment(base, root)
    try:
        folders = _git(["rev-parse", "--absolute-git-dir", "--git-common-dir"], cwd, env)
        if folders is None:
            return ""
        for folder in folders.splitlines():
            resolved = (cwd / folder).resolve()
            if resolved != root and root not in resolved.parents:
                return f"the repository's git directory {resolved} is outside the project"
        listing = _git(["config", "--list", "--show-scope", "-z"], cwd, env) or ""
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"git could not be asked about the repository ({error})"
    fields = listing.split("\0")
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0].lower()
        if scope in _OWN_SCOPES and _PROGRAM_KEYS.fullmatch(key):
            return f"the repository's own config sets {key}, which makes git run a program"
    return ""


def _git(args: Sequence[str], cwd: Path, env: Mapping[str, str]) -> str | None:
    """What ``git ARGS`` prints, or ``None`` when it fails (no repository)."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
    )
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


@contextmanager
def private_index(cwd: Path, env: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with ``GIT_INDEX_FILE`` on a copy of the repository's index, for one run (the
    contract); as it is where there is no repository or no copy can be made."""
    import tempfile  # only a git command that reads the index needs it

    try:
        folder = _git(["rev-parse", "--absolute-git-dir"], cwd, env)
        scratch = tempfile.TemporaryDirectory(prefix="skillstate-git-") if folder else None
    except (OSError, subprocess.TimeoutExpired):
        folder, scratch = None, None
    if folder is None or scratch is None:
        yield dict(env)
        return
    with scratch as place:
        copy = Path(place) / "index"
        index = Path(folder.strip()) / "index"
        if index.exists():
            shutil.copyfile(index, copy)
        yield {**env, "GIT_INDEX_FILE": str(copy)}
