"""A setting that needs an optional extra the installation lacks: a clear error at start."""

from __future__ import annotations


class MissingExtra(RuntimeError):
    """``what`` needs ``module``, installed with ``pip install 'skillstate[extra]'``."""

    def __init__(self, what: str, module: str, extra: str) -> None:
        super().__init__(f"{what} needs {module}: pip install 'skillstate[{extra}]'")
