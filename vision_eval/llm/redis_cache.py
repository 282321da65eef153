"""The call cache on a Redis server (``judge.cache_dir: redis://host:6379/0``), for jobs on many machines.

A cluster's jobs on a network filesystem share a SQLite file through the filesystem's locks, one commit at a time;
a Redis server answers them all from memory. The same protocol as the SQLite cache
(:mod:`vision_eval.llm.claims`): ``vision_eval:call:<key>`` holds the answer, ``vision_eval:claim:<key>`` the
claim of the process sending it, with the lease as the key's expiry. Each pass of queued operations is one
pipeline (one round trip); each lookup-and-claim is a server-side script, so two processes never both claim.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vision_eval.errors import OutputsNotWritten, PreflightError
from vision_eval.llm.batch_worker import Op
from vision_eval.llm.claims import FIND, LEASE_S, PEEK, PUT, RELEASE, SEND, ClaimingStore, Found, provably_dead

CALL, CLAIM = "vision_eval:call:", "vision_eval:claim:"

FIND_OR_CLAIM = """
local value = redis.call('GET', KEYS[1])
if value then return {1, value} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2, ''} end
local holder = redis.call('GET', KEYS[2])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[2], ARGV[2]) return {2, ''} end
return {3, holder}
"""
"""The answer (1, value); else the claim, taken (2); else who holds it (3, owner)."""

IF_MINE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then return redis.call('DEL', KEYS[1]) end
return redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) and 1 or 0
"""
"""Act on a claim only while ``ARGV[1]`` holds it: drop it (``ARGV[2]`` empty) or set it to ``ARGV[3]`` for
``ARGV[2]`` ms (a renewal, or the takeover of a dead holder's claim)."""


def safe_url(url: str) -> str:
    """``url`` without its password (for messages and run.json)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, parts.query, parts.fragment))


class RedisCallCache(ClaimingStore):
    """The call cache on a Redis server; raises :class:`~vision_eval.errors.PreflightError` when the server cannot
    be reached (before any call is sent)."""

    mode = "redis"

    def __init__(self, url: str, lease_s: float = LEASE_S) -> None:
        super().__init__(lease_s)
        self.url = safe_url(url)
        try:
            import redis
        except ImportError as exc:
            raise PreflightError(f'judge.cache_dir={self.url}: needs pip install "vision-eval[redis]"') from exc
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=10)
        try:
            self._client.ping()
        except self._errors as exc:
            raise PreflightError(f"judge.cache_dir={self.url}: cannot reach the Redis server: {exc}") from exc
        self._find = self._client.register_script(FIND_OR_CLAIM)
        self._if_mine = self._client.register_script(IF_MINE)

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "path": self.url, "why": "judge.cache_dir names a Redis server"}

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        try:
            self._client.set(CALL + key, json.dumps(value, ensure_ascii=False, default=str))
        except self._errors as exc:
            raise OutputsNotWritten(self.url, f"the Redis server refused the write: {exc}") from exc
        self.writes += 1

    def run_ops(self, ops: list[Op]) -> list[Any]:
        """One pipeline for the whole pass; then one more for the takeover of claims whose holder died here."""
        lease_ms = str(int(self.lease_s * 1000))
        pipe = self._client.pipeline(transaction=False)
        for op in ops:
            if op.kind == FIND:
                self._find(keys=[CALL + op.arg, CLAIM + op.arg], args=[self.owner, lease_ms], client=pipe)
            elif op.kind == PEEK:
                pipe.get(CALL + op.arg)
            elif op.kind == PUT:
                key, _, text = op.arg
                pipe.set(CALL + key, text)
                self._if_mine(keys=[CLAIM + key], args=[self.owner, ""], client=pipe)
            elif op.kind == RELEASE:
                self._if_mine(keys=[CLAIM + op.arg], args=[self.owner, ""], client=pipe)
            else:  # RENEW
                for key in op.arg:
                    self._if_mine(keys=[CLAIM + key], args=[self.owner, lease_ms, self.owner], client=pipe)
        try:
            replies = iter(pipe.execute(raise_on_error=False))
        except self._errors as exc:  # the server is gone: look-ups send, writes fail (counted), nothing waits
            failed = OutputsNotWritten(self.url, f"the Redis server is unreachable: {exc}")
            self.refused += sum(op.kind == PUT for op in ops)
            return [SEND if op.kind in (FIND, PEEK) else failed if op.kind == PUT else None for op in ops]
        outcomes: list[Any] = []
        for op in ops:
            if op.kind == FIND:
                outcomes.append(self._found(op.arg, next(replies), lease_ms))
            elif op.kind == PEEK:
                value = next(replies)
                outcomes.append(Found(json.loads(value)) if isinstance(value, bytes) else SEND)
            elif op.kind == PUT:
                written, _ = next(replies), next(replies)
                refused = f"the Redis server refused the write: {written}"
                self.refused += isinstance(written, Exception)
                outcomes.append(OutputsNotWritten(self.url, refused) if isinstance(written, Exception) else None)
            elif op.kind == RELEASE:
                next(replies)
                outcomes.append(None)
            else:
                for _ in op.arg:
                    next(replies)
                outcomes.append(None)
        return outcomes

    def _found(self, key: str, reply: Any, lease_ms: str) -> Found:
        if isinstance(reply, Exception):
            return SEND
        kind, payload = int(reply[0]), reply[1]
        if kind == 1:
            value: dict[str, Any] = json.loads(payload)
            return Found(value)
        if kind == 2:
            return SEND
        holder = payload.decode() if isinstance(payload, bytes) else str(payload)
        if provably_dead(holder):
            taken = self._if_mine(keys=[CLAIM + key], args=[holder, lease_ms, self.owner], client=self._client)
            if taken:
                return SEND  # else another process took it over first: wait for that one
        return Found(holder=holder)

    def close(self, timeout: float | None = None) -> bool:
        done = super().close(timeout)
        if done:
            self._client.close()
        return done
