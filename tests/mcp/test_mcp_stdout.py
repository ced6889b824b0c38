"""stdout of ``skillstate mcp`` carries the protocol and nothing else: read as raw lines from a
real process, each is one JSON-RPC message; the log lines are on stderr."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any


def _request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


async def test_stdout_holds_only_protocol(tmp_path: Path) -> None:
    messages = [
        _request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list", {}),
        _request(3, "tools/call", {"name": "compress", "arguments": {"content": "x\n" * 9000}}),
        _request(4, "tools/call", {"name": "retrieve", "arguments": {"ref": "ar_" + "0" * 24}}),
        _request(5, "resources/list", {}),
    ]
    stdin = "".join(json.dumps(message) + "\n" for message in messages).encode()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "skillstate", "mcp", "--verbose", "--data-dir", str(tmp_path / "data")),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    await proc.stdin.drain()
    # Every line read while the requests are answered must be a reply; stdin stays open
    # until the last one came (a server whose stdin closes drops the requests in flight).
    lines = [await asyncio.wait_for(proc.stdout.readline(), timeout=60) for _ in range(5)]
    proc.stdin.close()
    rest, err = await asyncio.wait_for(
        asyncio.gather(proc.stdout.read(), proc.stderr.read()), timeout=30
    )
    assert await proc.wait() == 0, err.decode()
    assert rest == b""
    replies = [json.loads(line) for line in lines]
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    assert sorted(reply["id"] for reply in replies) == [1, 2, 3, 4, 5]
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[3]["result"]["isError"] is False
    assert by_id[4]["result"]["isError"] is True
    assert "skillstate mcp: INFO" in err.decode()
