"""What ``skillstate shell`` shows for an output worth reducing: the reduction with its header
once the archive kept the exact output, else the exact stdout (nothing is reduced that was not
archived). Imported only for such an output (``cli.fast.shell``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from skillstate.cli.shell_settings import ShellSettings
from skillstate.integrations.shell.process import Outcome

if TYPE_CHECKING:
    import asyncio

    from skillstate.storage import StoreOptions

T = TypeVar("T")
_TICK_S = 0.01


def shown(settings: ShellSettings, argv: Sequence[str], family: str, outcome: Outcome) -> bytes:
    """The bytes to print on stdout for ``outcome``."""
    from skillstate.integrations.shell.run import reduction
    from skillstate.integrations.shell.run import shown as headed

    reduced = reduction(family, outcome)
    if reduced is None:
        return outcome.stdout
    try:
        ref = _archived(settings, argv, outcome)
    except Exception as error:  # a store that cannot keep it, for any reason: show it all
        sys.stderr.write(f"skillstate shell: archive unavailable ({error}); output unreduced\n")
        sys.stderr.flush()
        return outcome.stdout
    total = len(outcome.stdout.decode("utf-8", "replace"))
    return headed(reduced, ref, total)


def _archived(settings: ShellSettings, argv: Sequence[str], outcome: Outcome) -> str:
    """Archive the exact record of ``outcome``: one file and one row where that is all the
    store would do (``integrations.shell.archiving``), else through the store; its ref."""
    from skillstate.archive import canonical_span, ref_for
    from skillstate.integrations.shell import archiving
    from skillstate.integrations.shell.run import SESSION, record, summary

    options = _options(settings)
    data = canonical_span(record(argv, outcome))
    ref = ref_for(data)
    written = archiving.put(
        settings.data_dir,
        SESSION,
        ref,
        data,
        summary(argv),
        ttl=options.archive_ttl,
        max_bytes=options.archive_max_bytes,
        sealer=options.sealer,
    )
    return ref if written else _run(_keep(settings, argv, outcome))


def _options(settings: ShellSettings) -> StoreOptions:
    """The archive's bounds, and the data key's sealer where one is set (``cryptography`` is
    imported only then)."""
    from skillstate.storage import StoreOptions

    sealer = None
    if settings.data_key_file is not None or settings.data_key is not None:
        from skillstate.storage.data_key import sealer_for

        sealer = sealer_for(settings.data_key_file, settings.data_key)
    return StoreOptions.of_archive(settings.archive_ttl_days, settings.archive_max_mb, sealer)


def _run(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` for a sandboxed process. Codex's sandbox forbids ``send`` on sockets,
    and asyncio wakes its loop from another thread (where the stores do their file work) by
    sending a byte to itself: without a tick the loop would sleep through the wakeup for ever.
    """
    import asyncio

    loop = asyncio.new_event_loop()
    _tick(loop)
    try:
        return loop.run_until_complete(work)
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _tick(loop: asyncio.AbstractEventLoop) -> None:
    loop.call_later(_TICK_S, _tick, loop)


async def _keep(settings: ShellSettings, argv: Sequence[str], outcome: Outcome) -> str:
    from skillstate.archive import Archive
    from skillstate.integrations.shell.run import keep
    from skillstate.storage import open_stores

    options = _options(settings)
    # A store that cannot open says why in the one line ``shown`` prints, not in three.
    logging.getLogger("skillstate.storage").setLevel(logging.ERROR)
    stores = await open_stores(settings.data_dir, options=options)
    try:
        if stores.degraded or stores.disk_archive is None:
            raise RuntimeError(stores.degraded or "no archive store")
        return await keep(Archive(stores.archive), argv, outcome)
    finally:
        await stores.close()
