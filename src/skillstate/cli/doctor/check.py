"""One finding of ``skillstate doctor``: what was checked, how it stands, and the fix.

``ok`` is ``True`` (fine), ``False`` (a problem: ``fix`` says the command that mends it) or
``None`` (information only: not applicable, or absent by choice, such as a CLI not installed).
Only a ``False`` makes ``doctor`` exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool | None
    detail: str
    fix: str | None = None

    @property
    def status(self) -> str:
        """``ok``, ``FAIL`` or ``info``, as the table shows it."""
        return {True: "ok", False: "FAIL", None: "info"}[self.ok]

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def healthy(checks: Sequence[Check]) -> bool:
    """Whether no check found a problem (information does not count)."""
    return all(check.ok is not False for check in checks)


def report_json(checks: Sequence[Check]) -> dict[str, object]:
    """``{"ok": ..., "checks": [{"name", "ok", "detail", "fix"}, ...]}``."""
    return {"ok": healthy(checks), "checks": [check.as_json() for check in checks]}
