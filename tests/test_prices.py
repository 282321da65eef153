"""Prices and capabilities read from litellm's price map as data: the same answers as ``litellm.get_model_info``
for provider-prefixed ids, without importing litellm (a direct-path run never does)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vision_eval.llm import prices

FIELDS = ("key", "litellm_provider", "mode", "supports_vision", "input_cost_per_token", "output_cost_per_token",
          "input_cost_per_token_batches", "output_cost_per_token_batches")  # fmt: skip
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "bedrock",
             "bedrock_converse": "bedrock"}  # fmt: skip
UNMAPPED = ["anthropic/claude-newfamily-7", "gemini/gemini-9.9-flash", "openai/gpt-7", "openai/Qwen/Qwen2-VL-7B",
            "hosted_vllm/Qwen/Qwen2-VL", "openai/ft:gpt-4o-mini:org::abc", "openai/gpt-3.5-turbo-instruct",
            "bedrock/converse/ap-southeast-3/deepseek.v3.2", "anthropic/claude-3-5-sonnet-20240620"]  # fmt: skip


def sample_ids() -> list[str]:
    """Every map entry of the four providers as a prefixed id, with the variants users write (dated
    snapshots, upper case, Gemini version suffixes, Bedrock routes and regions), and unmapped ids."""
    ids: list[str] = []
    for key, info in prices._load().entries.items():
        prefix = PROVIDERS.get(str(info.get("litellm_provider")))
        if prefix is None:
            continue
        base = key if key.startswith(prefix + "/") else f"{prefix}/{key}"
        ids += [base, base + "-2099-01-01", base + "-001"]
        if prefix == "openai":
            ids.append(base.upper())
        if prefix == "bedrock":
            rest = base.split("/", 1)[1]
            ids += [f"bedrock/converse/{rest}", f"bedrock/us.{rest}", f"bedrock/invoke/eu.{rest}"]
    return ids + UNMAPPED


def test_lookup_equals_litellm_get_model_info() -> None:
    from vision_eval.llm.lazy_litellm import import_litellm

    litellm = import_litellm()
    ids = sample_ids()
    assert len(ids) > 3000
    differences = []
    for model in ids:
        try:
            expected = litellm.get_model_info(model)
        except Exception:
            expected = None
        mine = prices.model_info(model)
        if (expected is None) != (mine is None):
            differences.append((model, "mapped", expected is not None, mine is not None))
            continue
        if expected is None:
            continue
        for name in FIELDS:
            want, got = expected.get(name), mine.get(name)
            if name in ("input_cost_per_token", "output_cost_per_token") and got is None:
                got = 0  # litellm says 0 for a price its map does not state; here it stays unknown
            if want != got:
                differences.append((model, name, want, got))
    assert not differences, differences[:10]


def test_a_price_the_map_does_not_state_is_unknown_not_zero() -> None:
    assert prices.model_info("anthropic/claude-newfamily-7") is not None  # litellm's rules describe it...
    assert prices.token_prices("anthropic/claude-newfamily-7") is None  # ...but name no price
    assert prices.token_prices("openai/Qwen/Qwen2-VL-7B-Instruct") is None
    assert prices.batch_prices("hosted_vllm/anything") is None


def test_batch_prices_come_from_the_map_or_are_half_the_live_price() -> None:
    live = prices.token_prices("openai/gpt-4o-mini")
    batch = prices.batch_prices("openai/gpt-4o-mini")
    info = prices.model_info("openai/gpt-4o-mini")
    assert live is not None and batch is not None and info is not None
    assert batch == (info["input_cost_per_token_batches"], info["output_cost_per_token_batches"],
                     prices.BATCH_PRICE_FROM_MAP)  # fmt: skip
    no_batch_price = "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"
    assert prices.model_info(no_batch_price).get("input_cost_per_token_batches") is None
    live = prices.token_prices(no_batch_price)
    assert prices.batch_prices(no_batch_price) == (live[0] / 2, live[1] / 2, prices.BATCH_PRICE_HALF)


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "hosted_vllm/x/y"])
def test_pricing_and_the_vision_check_do_not_import_litellm(model: str, subprocess_env: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "from vision_eval.llm.models import check_vision\n"
        "from vision_eval.llm.transport import price\n"
        f"check_vision({model!r}); print(price({model!r}, 1000, 100))\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.strip()
    assert printed == "None" if model.startswith("hosted_vllm") else float(printed) > 0


def test_a_text_only_model_is_refused_as_a_judge() -> None:
    from vision_eval.llm.models import check_vision

    with pytest.raises(ValueError, match="not vision-capable"):
        check_vision("openai/gpt-3.5-turbo")
    check_vision("openai/gpt-4o-mini")
    check_vision("openai/my-local-model")  # unknown: allowed
