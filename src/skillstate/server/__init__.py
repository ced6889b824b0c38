"""The gateway's HTTP side (docs/request-path.md): the aiohttp app and its routes, reading and
judging a client's request, the one upstream door (``forward.py``), the relay of bytes and the
round loop that answers internal tool calls, and every error in the client's wire."""
