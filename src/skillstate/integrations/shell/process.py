"""Running one allowed command for ``skillstate shell`` (contract 2 of ``run``): no shell, stdin
closed, git hardened on a private copy of the index. Kept apart from ``run``, which archives and
reduces, so that a command whose output is shown as it is imports neither."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from skillstate.integrations.shell import git
from skillstate.integrations.shell.programs import PROGRAMS

REFUSED_EXIT = 2
MISSING_EXIT = 127


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command wrote and how it ended."""

    stdout: bytes
    stderr: bytes
    code: int


@contextmanager
def prepared(
    argv: Sequence[str], cwd: Path, root: Path, environ: Mapping[str, str]
) -> Iterator[tuple[list[str], dict[str, str] | None]]:
    """The words and environment an allowed command runs with, for one run (contract 2):
    git's hardened, on a private copy of the index; any other's as they are, in the inherited
    environment (``None``)."""
    found = PROGRAMS["git"].use_of(argv) if argv[0] == "git" else None
    if found is None:
        yield list(argv), None
        return
    with git.private_index(cwd, git.environment(environ, root)) as env:
        yield git.hardened(argv, found[1]), env


def execute(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> Outcome:
    """Run ``argv`` in ``cwd`` with no shell; a program that cannot start ends as a shell's
    would (127, its reason on stderr)."""
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True
        )
    except OSError as error:
        message = f"skillstate shell: {argv[0]}: {error.strerror or error}\n"
        return Outcome(b"", message.encode(), MISSING_EXIT)
    return Outcome(done.stdout, done.stderr, done.returncode)
