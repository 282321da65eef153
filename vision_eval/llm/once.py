"""Each call sent once, however many ask for it at the same time: the scheduler's way through the persistent cache.

A stored call is read (``cache_hits``); one that another process claimed is waited for and read from the cache
once it is stored (``peer_hits``); otherwise this run claims it, sends it and stores the answer, releasing the
claim when the call fails so that a waiter sends it (:mod:`vision_eval.llm.claims`). An identical call of this
run already on that way is waited for and counted where that one's answer came from (``coalesced`` when it was
sent).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from vision_eval.llm.budget import NotAttempted
from vision_eval.llm.claims import MAX_WAIT_S, ClaimingStore, find_or_wait
from vision_eval.llm.transport import CallError, CallResult


def _count(counters: Sequence[Any], name: str) -> None:
    for counter in counters:
        setattr(counter, name, getattr(counter, name) + 1)


class SendOnce:
    """The calls of one run on their way through the persistent cache, by key."""

    def __init__(self) -> None:
        self._inflight: dict[str, asyncio.Future[tuple[CallResult, str]]] = {}

    async def call(
        self,
        key: str,
        model: str,
        store: ClaimingStore,
        counters: Sequence[Any],
        send: Callable[[], Awaitable[CallResult]],
        max_wait_s: float = MAX_WAIT_S,
    ) -> CallResult:
        """The answer to the call ``key``: read, waited for (another process sending it, at most ``max_wait_s``
        seconds), or sent with ``send`` (which also keeps the answer in the run's journal and the cache).
        ``counters`` count where it came from."""
        while (leader := self._inflight.get(key)) is not None:
            try:
                shared, source = await asyncio.shield(leader)
            except asyncio.CancelledError:
                if leader.cancelled():  # the caller that was sending it was cancelled: try again
                    continue
                raise
            except CallError as error:  # it failed for this caller too
                _count(counters, "coalesced")
                _count(counters, "not_attempted" if isinstance(error, NotAttempted) else "failures")
                raise
            _count(counters, source)
            return CallResult.from_record(shared.to_cache(), model, cached=True, transport="cache")
        mine: asyncio.Future[tuple[CallResult, str]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = mine
        try:
            result, source = await self._claimed(key, model, store, counters, send, max_wait_s)
        except CallError as error:
            mine.set_exception(error)
            mine.exception()  # retrieved: nobody else may be waiting for it
            raise
        except BaseException:
            mine.cancel()
            raise
        finally:
            self._inflight.pop(key, None)
        mine.set_result((result, source))
        return result

    async def _claimed(
        self,
        key: str,
        model: str,
        store: ClaimingStore,
        counters: Sequence[Any],
        send: Callable[[], Awaitable[CallResult]],
        max_wait_s: float,
    ) -> tuple[CallResult, str]:
        """The answer, and the counter that an identical call waiting for it counts it in."""
        found, waited = await find_or_wait(store, key, max_wait_s)
        if found.value is not None:
            source = "peer_hits" if waited else "cache_hits"
            _count(counters, source)
            return CallResult.from_record(found.value, model, cached=True, transport="cache"), source
        try:
            result = await send()
        except BaseException:
            store.release(key)
            raise
        return result, "coalesced"
