"""``skillstate shell`` end to end, as a host runs it: a real process in a real project, the
exit code and stderr of the command kept, stdout reduced under its header, the exact output
in the data directory's archive; a hostile command refused before anything runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillstate.testing.shell_archive import archived_run

SRC = Path(__file__).parents[3] / "src"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), **extra}


def _skillstate(
    data_dir: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "skillstate", "--data-dir", str(data_dir), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, env=env or _env(), timeout=120)


def _ref(stdout: bytes) -> str:
    first = stdout.decode().splitlines()[0]
    assert first.startswith("[skillstate: output reduced on purpose")
    return next(word for word in first.split() if word.startswith("ar_"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    cases = [f"def test_pass_{n}():\n    assert {n} == {n}\n" for n in range(150)]
    cases.append("def test_broken():\n    assert 1 + 1 == 3\n")
    (root / "tests" / "test_many.py").write_text("\n\n".join(cases))
    (root / "big.txt").write_text("".join(f"line {n} of a long file\n" for n in range(2000)))
    return root


def test_a_failing_pytest_keeps_its_exit_code_and_is_reduced(project: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    words = ["python", "-m", "pytest", "-p", "no:cacheprovider", "-v", "tests"]
    bin_dir = Path(sys.executable).parent
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = _skillstate(data, project, "shell", "--", *words, env=env)
    assert done.returncode == 1, done.stderr
    text = done.stdout.decode()
    assert "test_broken" in text and "assert 1 + 1 == 3" in text
    assert "test_pass_7 PASSED" not in text
    archived_words, outcome = asyncio.run(archived_run(data, _ref(done.stdout)))
    assert archived_words == words
    direct = subprocess.run(words, cwd=project, capture_output=True, env=env)
    assert outcome.code == 1
    assert b"test_pass_7 PASSED" in outcome.stdout
    assert len(outcome.stdout) > len(done.stdout) > 0
    assert direct.returncode == 1


def test_stderr_is_exact_and_stdout_comes_back_from_the_archive(
    project: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    done = _skillstate(data, project, "shell", "--", "cat", "missing.txt", "big.txt")
    direct = subprocess.run(["cat", "missing.txt", "big.txt"], cwd=project, capture_output=True)
    assert done.returncode == direct.returncode == 1
    assert done.stderr == direct.stderr
    assert len(done.stdout) < len(direct.stdout) / 2
    _, outcome = asyncio.run(archived_run(data, _ref(done.stdout)))
    assert outcome.stdout == direct.stdout
    assert outcome.stderr == direct.stderr
    listed = _skillstate(data, project, "archive", "get", _ref(done.stdout))
    assert listed.returncode == 0 and "line 1999 of a long file" in listed.stdout.decode()


def test_a_small_output_is_printed_unchanged_with_no_header(project: Path, tmp_path: Path) -> None:
    (project / "small.txt").write_text("one\ntwo\n")
    done = _skillstate(tmp_path / "data", project, "shell", "--", "cat", "small.txt")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"one\ntwo\n", b"")
    assert not (tmp_path / "data").exists()  # nothing needed archiving


@pytest.mark.parametrize(
    "words",
    [
        ["sh", "-c", "touch pwned"],
        ["find", ".", "-delete"],
        ["git", "diff", "--output=pwned"],
        ["cat", "/etc/hostname"],
        ["FOO=1", "ls"],
        ["ls", "a\nb"],
    ],
)
def test_a_hostile_command_is_refused_at_execution(
    project: Path, tmp_path: Path, words: list[str]
) -> None:
    before = sorted(project.rglob("*"))
    done = _skillstate(tmp_path / "data", project, "shell", "--", *words)
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"refused, nothing ran" in done.stderr
    assert sorted(project.rglob("*")) == before


def test_rtk_on_path_takes_the_command_when_asked(project: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rtk"
    fake.write_text('#!/bin/sh\necho "rtk ran: $*"\necho "rtk err" >&2\nexit 5\n')
    fake.chmod(0o755)
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = _skillstate(tmp_path / "data", project, "shell", "--via-rtk", "--", "ls", env=env)
    assert (done.returncode, done.stdout, done.stderr) == (5, b"rtk ran: ls\n", b"rtk err\n")
    plain = _skillstate(tmp_path / "data", project, "shell", "--", "ls", env=env)
    assert plain.returncode == 0 and b"big.txt" in plain.stdout


FORBIDDEN_SEND = """\
import errno
import socket


def _forbidden(self, *args, **kwargs):
    raise PermissionError(errno.EPERM, "Operation not permitted")


socket.socket.send = _forbidden
"""


def test_it_archives_where_sockets_may_not_send(project: Path, tmp_path: Path) -> None:
    """Codex's sandbox forbids ``send`` on sockets, which asyncio uses to wake its loop when
    the stores' file work finishes in another thread; ``sitecustomize`` forbids it the same
    way here. The command must still finish, reduced and archived, instead of hanging."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FORBIDDEN_SEND)
    env = _env(PYTHONPATH=f"{site}{os.pathsep}{SRC}")
    data = tmp_path / "data"
    done = _skillstate(data, project, "shell", "--", "cat", "big.txt", env=env)
    assert done.returncode == 0, done.stderr
    _, outcome = asyncio.run(archived_run(data, _ref(done.stdout)))
    assert outcome.stdout == (project / "big.txt").read_bytes()


def test_an_archive_that_cannot_be_written_shows_it_all_with_one_note(
    project: Path, tmp_path: Path
) -> None:
    """A read-only data directory (Codex's read-only sandbox): stdout whole, one line why."""
    data = tmp_path / "data"
    data.write_text("not a folder")
    done = _skillstate(data, project, "shell", "--", "cat", "big.txt")
    assert done.returncode == 0
    assert done.stdout == (project / "big.txt").read_bytes()
    [note] = done.stderr.decode().splitlines()
    assert note.startswith("skillstate shell: archive unavailable") and "unreduced" in note


def test_it_keeps_to_the_project_root_it_is_given(project: Path, tmp_path: Path) -> None:
    """The hook passes the host's project root; ``skillstate shell`` judges again against it,
    from wherever the host runs it, and runs nothing that leaves it."""
    data = tmp_path / "data"
    (tmp_path / "secret").write_text("outside")
    root = ["shell", "--project", str(project), "--"]
    inside = _skillstate(data, project / "tests", *root, "cat", "../big.txt")
    assert inside.returncode == 0 and b"line 0 of a long file" in inside.stdout, inside.stderr
    for cwd, words in ((project / "tests", ["cat", "../../secret"]), (tmp_path, ["ls"])):
        done = _skillstate(data, cwd, *root, *words)
        assert done.returncode == 2 and done.stdout == b""
        assert done.stderr.startswith(b"skillstate shell: refused, nothing ran: ")


def test_nothing_runs_with_the_home_directory_as_the_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    for cwd, words in ((home, ["cat", ".ssh/id_rsa"]), (home / ".ssh", ["cat", "id_rsa"])):
        done = _skillstate(tmp_path / "data", cwd, "shell", "--", *words, env=_env(HOME=str(home)))
        assert done.returncode == 2 and b"PRIVATE" not in done.stdout
        assert b"refused, nothing ran: the project root" in done.stderr
