"""What the content lanes (``outputs``, ``vision``) share about the outputs they take out of a
request: which outputs they may take (text only), and which refs they know archived."""

from __future__ import annotations

from collections import OrderedDict

from skillstate.conversation import Text, ToolResult

KNOWN_SIZE = 4096
"""(session, ref) pairs remembered as archived."""


def text_of(result: ToolResult) -> str | None:
    """The output's text when it is text only (an output holding images or opaque items is
    left whole: a stand-in for part of it would misplace the rest)."""
    if not result.content or not all(isinstance(item, Text) for item in result.content):
        return None
    return "\n".join(item.text for item in result.content if isinstance(item, Text))


class KnownArchived:
    """The (session, ref) pairs a lane has archived lately: a history re-sends every output
    on every request, and archiving it again each time would be harmless, only wasted
    writes."""

    def __init__(self, size: int = KNOWN_SIZE) -> None:
        self._known: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._size = size

    def new(self, session: str, ref: str) -> bool:
        """Whether ``ref`` is not yet known archived for ``session`` (and is from now on)."""
        key = (session, ref)
        if key in self._known:
            self._known.move_to_end(key)
            return False
        self._known[key] = None
        while len(self._known) > self._size:
            self._known.popitem(last=False)
        return True
