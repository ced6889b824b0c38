"""Whose a session is: the naming rule that scopes every store to a tenant.

A session id is 1 to 128 characters of ``[A-Za-z0-9._:-]`` (``ID_RULE``). A tenant's session
(a request that came with a tenant's virtual key, ``storage.keys``) is ``<tenant>/<id>``: ``/``
is in no id, so no tenant's session can be named as another's, and everything kept under a
session (Σ, its epochs and documents, its archive index, its ledger rows) is the tenant's
through that prefix. A *scope* is the tenant whose data a caller may see, or None (the token,
an admin's key, a gateway without keys: everything).

* ``owns(scope, session)``: the session is the scope's (every session is, for no scope);
* ``named(scope, text)``: the session a caller means by ``text``: a tenant may write its own
  sessions as ``id`` or ``<tenant>/id``; another tenant's ``other/id`` names a session the
  caller does not own, which every route answers as unknown (404), exactly as a session that
  does not exist: a 403 would confirm it does.
"""

from __future__ import annotations

import re

from skillstate.storage.keys import valid_tenant

SEPARATOR = "/"
ID_RULE = "1 to 128 characters of letters, digits and . _ : -"
"""What a valid session id is, in words, for error messages."""
NAMED_RULE = f"{ID_RULE}, or a tenant's name, '/' and such an id"
"""What a session may be written as where a tenant's may be named, in words."""
_VALID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def valid_session_id(text: str) -> bool:
    """Whether ``text`` may name a session (``ID_RULE``)."""
    return _VALID.fullmatch(text) is not None


def owner(session: str) -> str | None:
    """The tenant a session id belongs to (None: no tenant's)."""
    tenant, separator, _ = session.partition(SEPARATOR)
    return tenant if separator else None


def owns(scope: str | None, session: str) -> bool:
    """Whether ``session`` is the scope's to see."""
    return scope is None or session.startswith(scope + SEPARATOR)


def valid_named(text: str) -> bool:
    """Whether ``text`` is a session id (``NAMED_RULE``): an id, or ``<tenant>/<id>``."""
    if valid_session_id(text):
        return True
    tenant, separator, rest = text.partition(SEPARATOR)
    return bool(separator) and valid_tenant(tenant) and valid_session_id(rest)


def named(scope: str | None, text: str) -> str:
    """The session ``text`` (already ``valid_named``) stands for in ``scope``: a tenant's bare
    id is under its own name; anything else is as written (and, for a tenant, another's
    session is one it does not ``own``)."""
    if scope is not None and valid_session_id(text):
        return scope + SEPARATOR + text
    return text
