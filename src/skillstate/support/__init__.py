"""Small helpers every layer may use, with no skillstate import of their own: JSON read and
written in steps (``jsonio``, ``longstrings``), bounded per-session caches (``caches``),
the event loop's setup (``eventloop``), and files and paths on disk (``files``)."""
