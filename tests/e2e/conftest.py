"""Fixtures of the end-to-end tests: each installed agent CLI, or a skip that says to run
`make clients`. Every test gets its own HOME (``tmp_path``) and its own ports, so the tests run
in parallel under pytest-xdist."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import binary
from real_llama import llama_server, real_python


@pytest.fixture
def codex() -> Path:
    return binary("codex")


@pytest.fixture
def opencode() -> Path:
    return binary("opencode")


@pytest.fixture
def claude() -> Path:
    return binary("claude")


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real llama.cpp server's base URL (one per test process), or a skip saying why there
    is none (``real_llama``). ``REAL_SERVER_URL`` names one already running instead (it
    must serve SmolLM2 as ``real_llama.MODEL`` with a 2,048-token context)."""
    running = os.environ.get("REAL_SERVER_URL")
    if running:
        yield running.rstrip("/")
        return
    python = real_python()
    with llama_server(python, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url
