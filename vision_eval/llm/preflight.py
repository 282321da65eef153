"""Checks of every configured model before any row is evaluated (a failure is exit 2, nothing ran).

1. The key: the variable named by ``api_key_env`` must be set (``api_key_env: null`` for servers that need
   none) — checked without sending anything.
2. The budget: with ``run.max_cost_usd``, every model's price must be known, else spending cannot be capped.
3. Unless ``run.preflight: false``: one tiny real request per model, through the call cache (a repeat costs
   nothing), so a wrong key, URL or model name fails at once with the provider's own message and a hint.
   It is a live call even for a ``batch: true`` judge (a batch job could take hours to say the key is wrong).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vision_eval.asyncio_runner import run_coroutine
from vision_eval.errors import PreflightError
from vision_eval.llm.prices import token_prices
from vision_eval.llm.transport import CallError

PING = [{"role": "user", "content": "Reply with the word OK."}]
PING_MAX_TOKENS = 16
OWNER = "preflight"


@dataclass
class ModelUse:
    """One distinct model config and who uses it (evaluator names, ``candidate``)."""

    config: Any
    users: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        where = f" at {self.config.api_base}" if self.config.api_base else ""
        return f"{self.config.model}{where} (used by {', '.join(self.users)})"


def model_uses(evaluators: list[Any], candidate: Any | None) -> list[ModelUse]:
    """Every distinct model the run will call."""
    uses: dict[str, ModelUse] = {}
    pairs = [("candidate", candidate)] if candidate is not None else []
    pairs += [(e.name, m) for e in evaluators for m in e.models()]
    for user, config in pairs:
        key = config.model_dump_json(exclude={"api_key"}) + str(config.api_key is not None)
        use = uses.setdefault(key, ModelUse(config))
        if user not in use.users:
            use.users.append(user)
    return list(uses.values())


def key_problems(uses: list[ModelUse]) -> list[str]:
    """One problem per key variable that is not set, naming the models and evaluators that need it."""
    missing: dict[str, list[ModelUse]] = {}
    for use in uses:
        config = use.config
        if config.api_key is None and config.api_key_env and not os.environ.get(config.api_key_env):
            missing.setdefault(config.api_key_env, []).append(use)
    problems = []
    for variable, needing in missing.items():
        models = sorted({str(u.config.model) for u in needing})
        users = list(dict.fromkeys(user for u in needing for user in u.users))
        problems.append(
            f"the API key variable {variable} is not set, needed by {', '.join(models)} (used by {', '.join(users)}): "
            "export it, or set api_key_env: null for a server that needs no key"
        )
    return problems


def price_problems(uses: list[ModelUse]) -> list[str]:
    """Models whose price is unknown (a budget cannot be enforced for them)."""
    return [
        f"{use.label}: its price is not in litellm's price map, so run.max_cost_usd cannot cap its spending"
        for use in uses
        if token_prices(str(use.config.model)) is None
    ]


def cache_problems(uses: list[ModelUse], scheduler: Any) -> list[str]:
    """Caches that cannot be opened (a Redis server that does not answer), found before any call is sent."""
    problems = []
    for use in uses:
        try:
            scheduler.cache_for(use.config)
        except PreflightError as error:
            problems.append(f"{use.label}: {error}")
    return problems


def _hint(use: ModelUse, error: CallError) -> str:
    config = use.config
    key = f"${config.api_key_env}" if config.api_key_env else "judge.api_key / the provider's key variable"
    if error.status in (401, 403):
        return f"check the key in {key}"
    if error.status == 404:
        return f"check the model name {config.model!r} and the URL {config.api_base or '(provider default)'}"
    if error.status is None:
        return f"is a server listening at {config.api_base or 'the provider URL'}? check judge.api_base"
    if error.status == 429:
        return "the provider is rate limiting or the account is out of quota"
    if error.status >= 500:
        return (
            "a server error is the provider's trouble, not your settings: retry later, or start without this "
            "check (run.preflight=false; rows whose calls still fail become error rows)"
        )
    return "check the model's settings (params, max_tokens)"


async def _ping(scheduler: Any, use: ModelUse) -> str | None:
    try:
        await scheduler.complete(use.config, PING, params={"max_tokens": PING_MAX_TOKENS}, owner=OWNER, batch=False)
    except CallError as error:
        return f"{use.label}: {error} — {_hint(use, error)}"
    return None


async def ping_all(scheduler: Any, uses: list[ModelUse]) -> list[str]:
    """One tiny request per model, concurrently; the problems found."""
    async with scheduler.session():
        found = await asyncio.gather(*(_ping(scheduler, use) for use in uses))
    return [p for p in found if p]


def preflight(
    uses: list[ModelUse], scheduler: Any, *, budget: bool, send: bool, scrub: Callable[[str], str] = str
) -> None:
    """Raise ``PreflightError`` listing every problem (keys first: no request is sent when one is missing);
    ``scrub`` masks secret values in the message (a provider's 401 body may quote the key)."""
    if not uses:
        return
    problems = key_problems(uses) or cache_problems(uses, scheduler)
    if not problems and budget:
        problems = price_problems(uses)
    if not problems and send:
        problems = run_coroutine(lambda: ping_all(scheduler, uses))
    if problems:
        raise PreflightError(scrub("; ".join(problems)))
