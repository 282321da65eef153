"""How long to wait before retrying a model call (live calls in the scheduler, batch requests in batch jobs)."""

from __future__ import annotations

import random

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


def backoff_delay(attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Seconds before retry ``attempt`` (1-based): ``Retry-After`` when given (plus up to 10% jitter),
    else exponential (0.5 s, 1 s, 2 s... capped at 30 s) with full jitter in [50%, 100%]."""
    if retry_after is not None:
        return retry_after * (1.0 + 0.1 * rng.random())
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1)) * (0.5 + 0.5 * rng.random())
