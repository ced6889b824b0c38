"""The host's own permission rules that name a program: where they are, the hook stays out.

Both hosts match their rules against the command that runs, and after a rewrite that is
``skillstate shell --project ROOT -- CMD``: a user's rule written for ``CMD`` would no longer
match it (checked with the real CLIs: tests/e2e/test_shell_hook_prompts.py). So a command whose
program a deny or ask rule of the user's names is left untouched, and the host applies the rule
itself.

Contract. ``named(host, texts)`` reads the rule files' texts and gives the programs their deny
and ask rules name, or ``EVERY`` when one names any command:

* Claude Code: ``permissions.deny`` and ``permissions.ask`` of each settings file, the rules
  for its shell tool, ``Bash`` (every command) or ``Bash(SPEC)``, whose program is SPEC's first
  word (``git diff:*`` → ``git``); a ``*`` in it, or nothing, names every command.
* Codex: each ``prefix_rule(pattern = [...], decision = ...)`` of its ``.rules`` files whose
  decision is not ``"allow"``: the first element of its pattern, a word or a list of them.

A file that cannot be read or parsed names nothing (the host reads it as it does); a program
named in any form (a path, another case) is matched by its name only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final, Literal

EVERY: Final = "*"
_SHELL_TOOL = re.compile(r"Bash(?:\((.*)\))?", re.DOTALL)
_RULE = re.compile(r"prefix_rule\s*\(")
_PATTERN = re.compile(r"pattern\s*=\s*\[\s*(\"[^\"]*\"|\[[^\]]*\])")
_DECISION = re.compile(r"decision\s*=\s*\"([^\"]*)\"")
_WORD = re.compile(r"\"([^\"]*)\"")


def named(host: Literal["claude", "codex"], texts: Iterable[str]) -> frozenset[str]:
    """The programs the rules in ``texts`` name (the contract)."""
    read = _claude if host == "claude" else _codex
    return frozenset(program for text in texts for program in read(text))


def _claude(text: str) -> Iterable[str]:
    try:
        permissions = json.loads(text).get("permissions")
    except (ValueError, AttributeError):
        return
    if not isinstance(permissions, dict):
        return
    for kind in ("deny", "ask"):
        rules = permissions.get(kind)
        for rule in rules if isinstance(rules, list) else []:
            match = _SHELL_TOOL.fullmatch(rule.strip()) if isinstance(rule, str) else None
            if match is not None:
                yield _program(match.group(1) or "")


def _program(spec: str) -> str:
    first = spec.strip().split(" ", 1)[0].split(":", 1)[0]
    return EVERY if not first or "*" in first else first.rsplit("/", 1)[-1]


def _codex(text: str) -> Iterable[str]:
    calls = _RULE.split(text)[1:]
    for call in calls:
        decision = _DECISION.search(call)
        if decision is not None and decision.group(1) == "allow":
            continue
        pattern = _PATTERN.search(call)
        if pattern is None:
            yield EVERY
            continue
        for word in _WORD.findall(pattern.group(1)):
            yield _program(word)
