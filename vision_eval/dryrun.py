"""``run.dry_run``: load the data, build every request, and say what the run would send and cost.

Nothing is sent and nothing is written. Per evaluator (and the candidate) and model: planned calls, estimated
prompt tokens (text at 4 characters a token, images by the provider's own formula), output tokens at most
``max_tokens`` per call, and dollars from litellm's price map: the prompt's cost, and the most the run could
cost with every reply at ``max_tokens``, each at the live price and at the provider's batch price
(``judge.batch: true``; the map's batch price, else half the live price). Unknown prices are said so. The images'
share of the prompt tokens is compared with what they would cost sized the other way: with a cost cap
(``image.max_side=1024``) when none is set, at the size the provider uses when one is.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from vision_eval.llm.budget import DEFAULT_OUTPUT_TOKENS
from vision_eval.llm.prices import batch_prices, token_prices


@dataclass
class PlanLine:
    """The planned calls of one evaluator (or the candidate) to one model."""

    evaluator: str
    model: str
    calls: int
    input_tokens: int
    max_output_tokens: int
    input_usd: float | None
    """The prompts at the live price."""
    max_usd: float | None
    """Prompts and every reply at ``max_tokens``, at the live price."""
    batch: bool = False
    """True when the run sends these calls in provider batch jobs (``batch: true`` and a provider with a batch API)."""
    batch_input_usd: float | None = None
    """The prompts at the batch price."""
    batch_max_usd: float | None = None
    """Prompts and every reply at ``max_tokens``, at the batch price."""
    image_tokens: int = 0
    """The images' share of ``input_tokens``, as they would be sent."""
    sized_otherwise: str = ""
    """The other sizing the images are priced at: ``max_side=1024`` (a cost cap) or ``the provider's size``."""
    image_tokens_sized_otherwise: int = 0
    """The images' tokens sized as ``sized_otherwise`` says."""


def _line(evaluator: str, config: Any, calls: int, tokens: int, images: dict[str, Any] | None = None) -> PlanLine:
    """One plan line; ``images``: the image tokens as sent and sized otherwise (``image_tokens``,
    ``image_tokens_sized_otherwise``, ``sized_otherwise``)."""
    output = calls * int(config.max_tokens or DEFAULT_OUTPUT_TOKENS)
    from vision_eval.llm.batches import batched

    line = PlanLine(evaluator, str(config.model), calls, tokens, output, None, None, batched(config))
    if images:
        line.image_tokens = int(images.get("image_tokens") or 0)
        line.image_tokens_sized_otherwise = int(images.get("image_tokens_sized_otherwise") or 0)
        line.sized_otherwise = str(images.get("sized_otherwise") or "")
    prices, batch = token_prices(str(config.model)), batch_prices(str(config.model))
    if prices is not None:
        line.input_usd, line.max_usd = tokens * prices[0], tokens * prices[0] + output * prices[1]
    if batch is not None:
        line.batch_input_usd, line.batch_max_usd = tokens * batch[0], tokens * batch[0] + output * batch[1]
    return line


def evaluator_lines(evaluator: Any, results: pl.DataFrame) -> list[PlanLine]:
    """An evaluator's planned calls per model, from its plan rows' ``details.by_model``."""
    configs = {str(m.model): m for m in evaluator.models()}
    planned: dict[str, dict[str, Any]] = {}
    for text in results.filter(pl.col("status") == "skipped")["details"].drop_nulls().to_list():
        for model, numbers in (json.loads(text).get("by_model") or {}).items():
            sums = planned.setdefault(model, {})
            for key in ("calls", "estimated_input_tokens", "image_tokens", "image_tokens_sized_otherwise"):
                sums[key] = sums.get(key, 0) + int(numbers.get(key) or 0)
            sums["sized_otherwise"] = numbers.get("sized_otherwise") or sums.get("sized_otherwise")
    return [
        _line(evaluator.name, configs[m], s["calls"], s["estimated_input_tokens"], s)
        for m, s in planned.items()
        if m in configs
    ]


def plan_table(lines: list[PlanLine]) -> dict[str, Any]:
    """The plan as run.json keeps it: lines and totals (dollars ``None`` when any price is unknown)."""
    known = all(line.input_usd is not None for line in lines)
    planned = [(line.batch_max_usd if line.batch else line.max_usd) for line in lines]
    return {
        "lines": [asdict(line) for line in lines],
        "calls": sum(line.calls for line in lines),
        "input_tokens": sum(line.input_tokens for line in lines),
        "max_output_tokens": sum(line.max_output_tokens for line in lines),
        "input_usd": sum(line.input_usd or 0.0 for line in lines) if known else None,
        "max_usd": sum(line.max_usd or 0.0 for line in lines) if known else None,
        "batch_input_usd": sum(line.batch_input_usd or 0.0 for line in lines) if known else None,
        "batch_max_usd": sum(line.batch_max_usd or 0.0 for line in lines) if known else None,
        "planned_max_usd": sum(p or 0.0 for p in planned) if known else None,
        "unknown_prices": sorted({line.model for line in lines if line.input_usd is None}),
    }


def print_plan(plan: dict[str, Any], warnings: list[str]) -> None:
    """The dry run's table on stdout."""
    from rich.console import Console
    from rich.table import Table

    def usd(value: float | None) -> str:
        return "unknown price" if value is None else f"${value:.4f}"

    table = Table(title="vision-eval dry run: nothing was sent")
    headers = ("evaluator", "model", "calls", "input tokens (est.)", "output tokens (max)", "input $ live",
               "max $ live", "input $ batch", "max $ batch")  # fmt: skip
    for header in headers:
        table.add_column(header, justify="left" if header in ("evaluator", "model") else "right")
    for line in plan["lines"]:
        table.add_row(
            line["evaluator"],
            line["model"] + (" (batch)" if line["batch"] else ""),
            str(line["calls"]),
            f"{line['input_tokens']:,}",
            f"{line['max_output_tokens']:,}",
            usd(line["input_usd"]),
            usd(line["max_usd"]),
            usd(line["batch_input_usd"]),
            usd(line["batch_max_usd"]),
        )
    table.add_row("total", "", str(plan["calls"]), f"{plan['input_tokens']:,}", f"{plan['max_output_tokens']:,}",
                  usd(plan["input_usd"]), usd(plan["max_usd"]), usd(plan["batch_input_usd"]),
                  usd(plan["batch_max_usd"]), style="bold")  # fmt: skip
    console = Console(width=180)
    console.print(table)
    console.print("max $ assumes every reply is max_tokens long; the real cost is usually far lower. "
                  "batch $: through the provider's batch API (judge.batch: true), at litellm's batch price or half "
                  "the live price.")  # fmt: skip
    if plan.get("planned_max_usd") is not None and any(line["batch"] for line in plan["lines"]):
        console.print(f"this run batches where marked (batch): at most {usd(plan['planned_max_usd'])}.")
    images = [line for line in plan["lines"] if line["image_tokens"] or line["image_tokens_sized_otherwise"]]
    if images:
        sized = Table(title="image tokens: as sent, and sized otherwise")
        for header in ("evaluator", "model", "as sent", "sized otherwise", "tokens then", "difference"):
            sized.add_column(header, justify="left" if header in ("evaluator", "model", "sized otherwise") else "right")
        for line in images:
            other, sent = line["image_tokens_sized_otherwise"], line["image_tokens"]
            sized.add_row(line["evaluator"], line["model"], f"{sent:,}", line["sized_otherwise"], f"{other:,}",
                          f"{other - sent:+,}")  # fmt: skip
        console.print(sized)
        console.print("images go at the size the model's provider uses unless image.max_side / max_pixels caps "
                      "them (a cost cap); 'sized otherwise' prices the other choice.")  # fmt: skip
    for model in plan["unknown_prices"]:
        console.print(f"[yellow]price unknown for {model}: its dollars are not estimated[/yellow]")
    for warning in warnings:
        console.print(f"[yellow]warning: {warning}[/yellow]")
