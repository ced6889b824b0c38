"""Reading back what ``skillstate shell`` archived, for the tests: the command and its outcome
kept under a ref, as the archive holds them."""

from __future__ import annotations

from pathlib import Path

from skillstate.archive import Archive
from skillstate.integrations.shell.run import Outcome, exact
from skillstate.storage import open_stores


async def archived_run(data_dir: Path, ref: str) -> tuple[list[str], Outcome]:
    """The command words and the outcome archived under ``ref`` in ``data_dir``'s stores."""
    stores = await open_stores(data_dir)
    try:
        messages = await Archive(stores.archive).span(ref)
    finally:
        await stores.close()
    assert messages is not None, f"nothing archived under {ref}"
    return exact(messages)
