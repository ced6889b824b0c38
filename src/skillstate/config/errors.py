"""The one exception configuration raises."""

from __future__ import annotations

from collections.abc import Iterable


class ConfigError(Exception):
    """Settings could not be built. Each problem names the key and the source it came from.

    The command line prints each problem as ``config error: <problem>`` and exits with 2.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("\n".join(self.problems))
