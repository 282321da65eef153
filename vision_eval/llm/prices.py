"""Model prices and capabilities from litellm's price map, read without importing litellm.

litellm ships its price map as JSON inside the package (``model_prices_and_context_window_backup.json``,
what litellm itself loads with ``LITELLM_LOCAL_MODEL_COST_MAP=True``). Importing litellm to read it costs
about 3 s, which every fresh process on the lean direct path would pay just to price its calls; this module
parses the file (tens of ms, once) and reproduces ``litellm.get_model_info``'s lookup for provider-prefixed ids
of the providers in :data:`NATIVE_PROVIDERS` (the candidate names it tries, case-insensitive keys, the
provider check, and the fallback rules for unmapped ids). Ids of other providers are looked up through litellm
itself. Unlike litellm, a price the map does not state is ``None`` (unknown), never 0.

Batch prices: the map's ``input_cost_per_token_batches`` / ``output_cost_per_token_batches`` where it has them,
else half the live price (what OpenAI, Anthropic and Gemini charge for their batch APIs).
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from vision_eval.llm.lazy_litellm import import_litellm

PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"
NATIVE_PROVIDERS = frozenset({"openai", "anthropic", "gemini", "bedrock", "hosted_vllm"})
"""Providers whose ids are looked up here (tested equal to ``litellm.get_model_info``)."""
BATCH_DISCOUNT = 0.5
"""Batch price as a share of the live price when the map has no batch price for the model."""
BATCH_PRICE_FROM_MAP = "litellm price map (*_cost_per_token_batches)"
BATCH_PRICE_HALF = "50% of the live price (no batch price in litellm's map)"
_BACKFILL_MODES = ("chat", "responses")
_BEDROCK_ROUTES = ("bedrock/", "chat_completions/", "converse/", "invoke/", "openai/", "mantle/", "nova-2/", "nova/")
_CROSS_REGION = ("global", "us", "eu", "apac", "jp", "au", "us-gov")
_REGIONS = frozenset(
    {
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
        "us-gov-east-1",
        "us-gov-west-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "eu-central-1",
        "eu-central-2",
        "eu-south-1",
        "eu-south-2",
        "eu-north-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ca-central-1",
        "sa-east-1",
    }
)
"""The regions litellm recognises in a ``bedrock/<region>/<model>`` path."""
_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    info: dict[str, Any]
    fill_missing_for: frozenset[str]


@dataclass(frozen=True)
class _PriceMap:
    entries: dict[str, dict[str, Any]]
    lowercase: dict[str, str]
    capability_rules: tuple[_Rule, ...]


def price_map_path() -> Path | None:
    """The JSON file inside the installed litellm package, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / PRICE_MAP_FILE
    return path if path.is_file() else None


def _rules(raw: Any) -> tuple[_Rule, ...]:
    """litellm's capability rules (those whose ``model_info`` says more than a provider), in file order."""
    rules = raw.get("rules") if isinstance(raw, dict) else None
    by_name = {r["name"]: r["model_info"] for r in rules or [] if isinstance(r, dict) and isinstance(r.get("name"), str)
               and isinstance(r.get("model_info"), dict)}  # fmt: skip
    out = []
    for rule in rules or []:
        if not isinstance(rule, dict) or not isinstance(rule.get("pattern"), str):
            continue
        info = rule.get("model_info")
        if not isinstance(info, dict):
            continue
        parent = by_name.get(rule.get("extends")) if isinstance(rule.get("extends"), str) else None
        info = {**parent, **info} if parent is not None else info
        if "litellm_provider" in info and len(info) == 1:
            continue  # a routing rule: it only picks a provider for a bare id
        try:
            pattern = re.compile(rule["pattern"], re.IGNORECASE)
        except re.error:
            continue
        out.append(_Rule(pattern, info, frozenset(rule.get("fill_missing_for_providers") or ())))
    return tuple(out)


@lru_cache(maxsize=1)
def _load() -> _PriceMap:
    path = price_map_path()
    raw: dict[str, Any] = json.loads(path.read_bytes()) if path is not None else {}
    rules = _rules(raw.pop("fallback_generalizations", None))
    entries = {k: v for k, v in raw.items() if isinstance(v, dict)}
    for info in list(entries.values()):  # litellm expands ``aliases`` into top-level keys
        for alias in info.pop("aliases", None) or []:
            entries.setdefault(alias, info)
    return _PriceMap(entries, {k.lower(): k for k in entries}, rules)


def _cost_key(table: _PriceMap, name: str) -> str | None:
    if name in table.entries:
        return name
    return table.lowercase.get(name.lower())


def _provider_matches(info: dict[str, Any], provider: str) -> bool:
    listed = info.get("litellm_provider")
    if listed is None or listed == provider:
        return True
    return provider.startswith("bedrock") and str(listed).startswith("bedrock")


def _bedrock_base(model: str) -> str:
    """litellm's base Bedrock id: routing prefixes, ARNs, throughput suffixes and region prefixes removed."""
    model = _strip_bedrock_routes(model)
    if "arn" in model.lower():
        model = model.split("/")[-1]
    model = re.sub(r"(:\d+):\d+[km]$", r"\1", model)  # provisioned-throughput suffix (":0:51k")
    head = model.split(".", 1)[0]
    if head in _CROSS_REGION:
        return model.split(".", 1)[1]
    region, _, rest = model.partition("/")
    return rest if rest and region in _REGIONS else model


def _strip_bedrock_routes(model: str) -> str:
    for prefix in _BEDROCK_ROUTES:
        if model.startswith(prefix):
            model = model.split("/", 1)[1]
    return model


def _stripped(model: str, provider: str) -> str:
    if provider == "bedrock":
        return _bedrock_base(model)
    if provider == "gemini":
        return re.sub(r"-\d+$", "", model)
    if "ft:" in model:
        return re.sub(r"(:[^:]*){3}$", "", model)
    return _DATED_SUFFIX.sub("", model)


def _candidates(model: str, provider: str) -> tuple[str, ...]:
    """The names ``get_model_info`` tries, in its order, for an id without an explicit provider argument."""
    split = model.split("/", 1)[1]
    if provider == "bedrock":
        split = _strip_bedrock_routes(split)
    stripped = _stripped(model, provider)
    return (model, model, model, split, stripped, stripped, model)


def _fill_missing(table: _PriceMap, key: str, info: dict[str, Any]) -> dict[str, Any]:
    provider = str(info.get("litellm_provider") or "")
    if info.get("mode", "chat") not in _BACKFILL_MODES or not provider:
        return info
    extra: dict[str, Any] = {}
    for rule in table.capability_rules:
        if provider in rule.fill_missing_for and rule.pattern.search(key):
            extra.update({k: v for k, v in rule.info.items() if k != "litellm_provider"})
    return {**{k: v for k, v in extra.items() if k not in info}, **info} if extra else info


def _generalized(table: _PriceMap, candidates: tuple[str, ...], provider: str) -> dict[str, Any] | None:
    """An unmapped id described by litellm's capability rules (never when some candidate is a known key)."""
    if any(_cost_key(table, c) is not None for c in candidates):
        return None
    for candidate in candidates:
        matched = [rule.info for rule in table.capability_rules if rule.pattern.search(candidate)]
        if matched:
            merged = {k: v for info in matched for k, v in info.items()}
            return {**merged, "litellm_provider": provider, "key": candidate}
    return None


def _native_info(model: str) -> dict[str, Any] | None:
    table = _load()
    provider = model.split("/", 1)[0]
    candidates = _candidates(model, provider)
    for candidate in candidates:
        key = _cost_key(table, candidate)
        if key is not None and _provider_matches(table.entries[key], provider):
            info = _fill_missing(table, key, table.entries[key])
            return {**info, "key": key, "litellm_provider": info.get("litellm_provider", provider)}
    return _generalized(table, candidates, provider)


def _litellm_info(model: str) -> dict[str, Any] | None:
    try:
        return dict(import_litellm().get_model_info(model))
    except Exception:  # litellm raises several kinds for unmapped models
        return None


@lru_cache(maxsize=512)
def model_info(model: str) -> dict[str, Any] | None:
    """What litellm's map says about a model id (``key`` names the entry), or ``None`` when unmapped."""
    provider = model.split("/", 1)[0] if "/" in model else None
    if provider in NATIVE_PROVIDERS:
        return _native_info(model)
    if provider is None:
        table = _load()
        key = _cost_key(table, model)
        return {**table.entries[key], "key": key} if key is not None else None
    return _litellm_info(model)


def _pair(info: dict[str, Any] | None, suffix: str = "") -> tuple[float, float] | None:
    if info is None:
        return None
    prompt, completion = info.get(f"input_cost_per_token{suffix}"), info.get(f"output_cost_per_token{suffix}")
    if prompt is None or completion is None:
        return None
    return float(prompt), float(completion)


def token_prices(model: str) -> tuple[float, float] | None:
    """(input, output) USD per token at the live price, or ``None`` when unknown."""
    return _pair(model_info(model))


def batch_prices(model: str) -> tuple[float, float, str] | None:
    """(input, output) USD per token through the provider's batch API, and where that price comes from."""
    info = model_info(model)
    stated = _pair(info, "_batches")
    if stated is not None:
        return stated[0], stated[1], BATCH_PRICE_FROM_MAP
    live = _pair(info)
    if live is None:
        return None
    return live[0] * BATCH_DISCOUNT, live[1] * BATCH_DISCOUNT, BATCH_PRICE_HALF
