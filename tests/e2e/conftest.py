"""Fixtures of the end-to-end tests: each installed agent CLI, or a skip that says to run
`make clients`. Every test gets its own HOME (``tmp_path``) and its own ports, so the tests run
in parallel under pytest-xdist."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import binary


@pytest.fixture
def codex() -> Path:
    return binary("codex")


@pytest.fixture
def opencode() -> Path:
    return binary("opencode")


@pytest.fixture
def claude() -> Path:
    return binary("claude")
