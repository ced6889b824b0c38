"""``skillstate hook`` and ``skillstate shell`` without click: an agent host runs the hook before
every shell call and the rewritten command after it, so both start as a bare interpreter does,
importing the shell lane's allowlist and nothing of the gateway (no click group, no settings
model, no aiohttp, no storage stack for an output shown as it is).

``main.main`` hands a command line here first; ``run`` answers the forms it reads and returns
``None`` for every other one, which the click group then answers exactly as before (a bad host,
an unknown option, a missing command, ``--help``, the flags given before the command name).
What each command does is written once, here (``hook``, ``shell``); ``cli/shell.py``'s click
commands call the same functions. tests/cli/test_fast_entry.py pins what is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from skillstate.cli.shell_settings import ShellSettings

CONFIG_ERROR_EXIT = 2
SMALL_OUTPUT = 2000
"""Below this many bytes stdout is shown as it is (``reducers.MIN_CHARS``, in characters, which
never outnumber bytes), so the reducers are not imported for it; a test keeps the two equal."""
_MANAGED_CLAUDE = Path("/etc/claude-code/managed-settings.json")
_HOSTS = ("claude", "codex")


def run(args: Sequence[str]) -> int | None:
    """The exit status of ``skillstate ARGS`` when this module answers it, else ``None``."""
    if not args:
        return None
    if args[0] == "hook":
        parsed = _hook_args(args[1:])
        if parsed is None:
            return None
        return hook(parsed[0], parsed[1], sys.stdin.read(), os.environ)
    if args[0] == "shell":
        found = _shell_args(args[1:])
        if found is None:
            return None
        from skillstate.cli.shell_settings import read_settings

        command, options = found
        project = options.get("--project")
        return shell(
            command,
            Path(project) if project is not None else None,
            via_rtk="--via-rtk" in options,
            settings=lambda: read_settings(
                data_dir=options.get("--data-dir"), config_path=options.get("--config")
            ),
        )
    return None


def _hook_args(args: Sequence[str]) -> tuple[str, str] | None:
    """``HOST [--program P]``, else ``None``."""
    if not args or args[0] not in _HOSTS:
        return None
    rest = list(args[1:])
    program = "skillstate"
    while rest:
        word = rest.pop(0)
        if word == "--program" and rest:
            program = rest.pop(0)
        elif word.startswith("--program="):
            program = word.removeprefix("--program=")
        else:
            return None
    return args[0], program


_VALUED = ("--project", "--data-dir", "--config")


def _shell_args(args: Sequence[str]) -> tuple[list[str], dict[str, str | None]] | None:
    """``[--project DIR] [--via-rtk] [--data-dir DIR] [--config FILE] [--] CMD...`` as click
    reads them (options stop at ``--`` or the first word that is not one), else ``None``."""
    options: dict[str, str | None] = {}
    rest = list(args)
    while rest:
        word = rest[0]
        if word == "--":
            rest.pop(0)
            break
        if not word.startswith("-") or word == "-":
            break
        rest.pop(0)
        name, equals, value = word.partition("=")
        if name == "--via-rtk" and not equals:
            options[name] = None
        elif name in _VALUED and equals:
            options[name] = value
        elif name in _VALUED and rest:
            options[name] = rest.pop(0)
        else:
            return None
    project = options.get("--project")
    if not rest or (project is not None and not Path(project).is_dir()):
        return None
    return rest, options


def hook(host: str, program: str, event: str, environ: Mapping[str, str]) -> int:
    """Answer one PreToolUse event (``integrations.shell.hook``); always 0."""
    from skillstate.integrations.shell.hook import Host, answer

    chosen = Host(host)
    project = environ.get("CLAUDE_PROJECT_DIR")  # what Claude Code gives its hooks
    rules = rule_files(chosen.value, environ)
    reply = answer(event, chosen, program=program, project=project, rule_files=rules)
    if reply.note:
        _print(reply.note, sys.stderr)
    if reply.output:
        _print(reply.output, sys.stdout)
    return 0


def rule_files(host: str, environ: Mapping[str, str]) -> list[Path]:
    """The host's permission rules outside the project: Claude Code's user and managed
    settings, Codex's ``rules/*.rules`` beside its config. The paths are those of
    ``integrations.claude.settings_path`` and ``codex.config_path`` for the user scope (a test
    keeps them equal), without importing every host's installer."""
    home_text = environ.get("HOME")
    home = Path(home_text) if home_text else Path.home()
    if host == "claude":
        configured = environ.get("CLAUDE_CONFIG_DIR")
        folder = Path(configured) if configured else home / ".claude"
        return [folder / "settings.json", _MANAGED_CLAUDE]
    codex_home = environ.get("CODEX_HOME")
    config = Path(codex_home) / "config.toml" if codex_home else home / ".codex" / "config.toml"
    rules = config.parent / "rules"
    return sorted(rules.glob("*.rules")) if rules.is_dir() else []


def shell(
    command: Sequence[str],
    project: Path | None,
    *,
    via_rtk: bool,
    settings: Callable[[], ShellSettings],
) -> int:
    """Run one allowed command and show its output (``integrations.shell.run``'s contract);
    the command's exit status, 2 for a refused one or bad settings."""
    from skillstate.cli.shell_settings import SettingsProblems
    from skillstate.integrations.shell.allow import Place, decide_argv
    from skillstate.integrations.shell.process import REFUSED_EXIT, execute, prepared

    cwd = Path.cwd()
    place = Place.of(project or cwd, cwd)
    decision = decide_argv(command, place)
    if not decision.allowed:
        _print(f"skillstate shell: refused, nothing ran: {decision.reason}", sys.stderr)
        return REFUSED_EXIT
    rtk = _which("rtk") if via_rtk else None
    chosen: ShellSettings | None = None
    if rtk is None:
        try:
            chosen = settings()
        except SettingsProblems as problems:
            for problem in problems.problems:
                _print(f"config error: {problem}", sys.stderr)
            return CONFIG_ERROR_EXIT
    with prepared(decision.argv, cwd, place.root, place.environ) as (argv, env):
        outcome = execute([rtk, *argv] if rtk is not None else argv, cwd, env)
    if chosen is None or len(outcome.stdout) < SMALL_OUTPUT:  # as it is: nothing to reduce
        _write(outcome.stdout, outcome.stderr)
        return outcome.code
    from skillstate.cli.shell_archive import shown

    _write(shown(chosen, decision.argv, decision.family, outcome), outcome.stderr)
    return outcome.code


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def _print(text: str, stream: TextIO) -> None:
    """A line on ``stream``, as ``click.echo`` writes it."""
    stream.write(text + "\n")
    stream.flush()


def _write(stdout: bytes, stderr: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(stdout)
    sys.stdout.buffer.flush()
    sys.stderr.flush()
    sys.stderr.buffer.write(stderr)
    sys.stderr.buffer.flush()
