"""The run's spending cap (``run.max_cost_usd``) and the calls that are not attempted.

Before a call starts, its cost is estimated (estimated prompt tokens at the input price plus ``max_tokens``
at the output price: an upper bound) and reserved. A call that would take spent + reserved past the budget
waits while other calls are in flight (their real cost usually frees room); when nothing is in flight and it
still does not fit, the budget is exhausted and no further call starts. Finished calls replace their
reservation by their real cost.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vision_eval.llm.prices import batch_prices, token_prices
from vision_eval.llm.transport import CallError

BUDGET = "budget"
CIRCUIT_BREAKER = "circuit_breaker"
STOPPED = "stopped"
"""A call not started because the run is stopping (its journal could not record the calls before it)."""
DEFAULT_OUTPUT_TOKENS = 1024
"""Output tokens assumed for a call whose ``max_tokens`` is not set."""


class NotAttempted(CallError):
    """A call the scheduler refused to start (``kind``: ``budget``, ``circuit_breaker`` or ``stopped``)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, None)
        self.kind = kind
        self.retryable = False
        self.attempts = 0
        self.failures: list[str] = []


def estimate_cost(
    judge: Any, estimated_tokens: int, params: dict[str, Any] | None = None, batch: bool = False
) -> float | None:
    """Upper-bound dollars of one call, live or in a batch job (``None`` when the model's price is unknown)."""
    prices = batch_prices(str(judge.model)) if batch else token_prices(str(judge.model))
    if prices is None:
        return None
    output = (params or {}).get("max_tokens") or judge.max_tokens or DEFAULT_OUTPUT_TOKENS
    return estimated_tokens * prices[0] + int(output) * prices[1]


class Budget:
    """Spent and reserved dollars against ``limit`` (no limit: only counts what was spent)."""

    def __init__(self, limit: float | None, spent: float = 0.0) -> None:
        self.limit = limit
        self.spent = spent
        self.reserved = 0.0
        self.in_flight = 0
        self.exhausted = False
        self._changed = asyncio.Condition()

    def bind(self) -> None:
        """Fresh asyncio primitives for a new event loop (the scheduler calls this when its loop changes)."""
        self._changed = asyncio.Condition()

    def message(self) -> str:
        return f"budget exhausted (${self.spent:.4f} of ${self.limit:.4f} spent)"

    async def reserve(self, estimate: float) -> float:
        """Reserve ``estimate`` dollars, waiting for in-flight calls if needed; raises ``NotAttempted``."""
        if self.limit is None:
            return 0.0
        changed = self._changed
        async with changed:
            while not self.exhausted and self.spent + self.reserved + estimate > self.limit:
                if self.in_flight == 0:
                    self.exhausted = True
                    break
                await changed.wait()
            if self.exhausted:
                raise NotAttempted(f"not attempted: {self.message()}", BUDGET)
            self.reserved += estimate
            self.in_flight += 1
        return estimate

    async def settle(self, reserved: float, actual: float | None) -> None:
        """Replace a reservation by the call's real cost (``None``: unknown, counted as the estimate)."""
        cost = actual if actual is not None else reserved
        if self.limit is None:
            self.spent += actual or 0.0
            return
        changed = self._changed
        async with changed:
            self.reserved -= reserved
            self.in_flight -= 1
            self.spent += cost
            changed.notify_all()
