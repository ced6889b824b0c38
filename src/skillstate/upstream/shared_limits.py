"""An upstream's rate limit shared by every gateway that uses one Redis (the ``redis`` setting),
so that ``rpm = N`` admits N requests a minute across all instances, not N per instance.

The window and the rule are ``limits.RateLimit``'s (a rolling 60 seconds of the requests
admitted, each at the time it may start, with its prompt tokens), kept in one sorted set per
upstream (``skillstate:limit:<upstream>``: score the start time, member ``<id>:<tokens>``)
and decided by one Lua script, so that the read and the admission are one atomic step however
many instances ask at once. The script runs on Redis's clock (``TIME``), so instances on
machines whose clocks differ still share one window.

A Redis that cannot be reached never fails a request: the limit falls back to this process's
own window (``limits.RateLimit``) and says so once in the log, until Redis answers again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from skillstate.upstream.limits import WINDOW_S, Admission, RateLimit

log = logging.getLogger("skillstate.upstream")

KEY_PREFIX = "skillstate:limit:"

# KEYS[1]: the window's sorted set, KEYS[2]: its id counter. ARGV: rpm (0: none), tpm (0: none),
# tokens, max_wait_s, window_s. Returns {admitted (1/0), wait or retry-after as a string}.
_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local tokens, max_wait, window = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if tpm > 0 and tokens > tpm then return {0, '0'} end
local sent = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local count = #sent / 2
local at = now
if rpm > 0 and count >= rpm then
  at = math.max(at, tonumber(sent[2 * (count - rpm) + 2]) + window)
end
if tpm > 0 then
  local total = 0
  for i = 1, count do
    local member = sent[2 * i - 1]
    total = total + tonumber(string.match(member, ':(%d+)$'))
  end
  for i = 1, count do
    if total + tokens <= tpm then break end
    total = total - tonumber(string.match(sent[2 * i - 1], ':(%d+)$'))
    at = math.max(at, tonumber(sent[2 * i]) + window)
  end
end
local wait = at - now
if wait > max_wait then return {0, tostring(wait)} end
local id = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], at, id .. ':' .. tokens)
redis.call('EXPIRE', KEYS[1], math.ceil(window * 2 + max_wait))
redis.call('EXPIRE', KEYS[2], math.ceil(window * 2 + max_wait))
return {1, tostring(wait)}
"""


@dataclass(slots=True)
class SharedRateLimit:
    """``RateLimit``'s rule over one Redis; ``local`` is the window used while Redis cannot
    be reached."""

    redis: Any
    upstream: str
    local: RateLimit
    _script: Any = None
    _down: bool = field(default=False)

    @property
    def key(self) -> str:
        return KEY_PREFIX + self.upstream

    async def admit(self, tokens: int) -> Admission:
        """As ``RateLimit.admit``, across every instance on the same Redis."""
        limit = self.local
        try:
            if self._script is None:
                self._script = self.redis.register_script(_SCRIPT)
            admitted, seconds = await self._script(
                keys=[self.key, self.key + ":id"],
                args=[limit.rpm or 0, limit.tpm or 0, tokens, limit.max_wait_s, WINDOW_S],
            )
        except Exception as error:
            if not self._down:
                log.warning(
                    "upstream %r: its shared rate limit cannot be read (%s): this process's own"
                    " until Redis answers",
                    self.upstream,
                    error,
                )
                self._down = True
            return limit.admit(tokens)
        if self._down:
            log.info("upstream %r: its shared rate limit is read again", self.upstream)
            self._down = False
        wait = float(seconds)
        return Admission(wait) if int(admitted) else Admission(None, wait)
