"""What a run's exit code says: the gates every evaluator accepts, and the run-level stops.

Exit codes are the same for ``vision-eval`` and ``vision_eval.evaluate(...)`` (``EvalResult.exit_code``); what
each means is documented once, in the README's table ("In CI and on clusters").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

from vision_eval.exit_codes import EXIT_GATE, EXIT_INCOMPLETE, worst
from vision_eval.results import ERROR, NOT_SELECTED, SKIPPED
from vision_eval.wording import counted

TOP_REASONS = 3
AT_MOST, AT_LEAST = "\u2264", "\u2265"


@dataclass
class Gate:
    """One checked gate of one evaluator (or of the run)."""

    evaluator: str
    gate: str
    """``max_error_rate``, ``min_pass_rate``, ``min_mean_score``, ``budget``, ``circuit_breaker``..."""
    value: float | None
    limit: float | None
    passed: bool
    exit_code: int
    """What a failure of this gate makes the run exit with."""
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Outcome:
    """The verdict on a finished run."""

    gates: list[Gate] = field(default_factory=list)
    top_errors: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """Per evaluator with errors: its most common error reasons with their counts."""

    @property
    def failed(self) -> list[Gate]:
        return [g for g in self.gates if not g.passed]

    @property
    def exit_code(self) -> int:
        return worst([g.exit_code for g in self.failed])

    @property
    def problems(self) -> list[str]:
        return [g.message for g in self.failed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "problems": self.problems,
            "gates": [g.as_dict() for g in self.gates],
            "top_errors": {k: [{"reason": r, "rows": n} for r, n in v] for k, v in self.top_errors.items()},
        }


def top_errors(results: pl.DataFrame | pl.LazyFrame, limit: int = TOP_REASONS) -> dict[str, list[tuple[str, int]]]:
    """The most common error reasons of each evaluator that has errors (one streaming pass over the error rows)."""
    errors = results.lazy().filter(pl.col("status") == ERROR).group_by("evaluator", "error").len()
    counted = errors.collect(engine="streaming").sort(["evaluator", "len", "error"], descending=[False, True, False])
    out: dict[str, list[tuple[str, int]]] = {}
    for (name,), group in counted.group_by("evaluator", maintain_order=True):
        out[str(name)] = [(str(r), int(n)) for r, n in group.select("error", "len").head(limit).iter_rows()]
    return out


def compared(value: float, limit: float, *, upper: bool, percent: bool) -> str:
    """``value`` against its ``upper`` (or lower) ``limit``, with the comparison that holds between them:
    ``0.0% ≤ 10.0%``, ``12.5% > 10.0%``, ``0.950 ≥ 0.9``, ``0.667 < 0.9``. The limit is written as configured (a
    percentage to one decimal, a number as ``:g``); the value gets more decimals when fewer would round it onto the
    limit (never ``10.0% > 10.0%``)."""
    scale, digits = (100, 1) if percent else (1, 3)
    while digits < 12 and value != limit and round(value * scale, digits) == round(limit * scale, digits):
        digits += 1
    shown = f"{value:.{digits}%}" if percent else f"{value:.{digits}f}"
    wanted = f"{limit:.1%}" if percent else f"{limit:g}"
    if upper:
        return f"{shown} {AT_MOST if value <= limit else '>'} {wanted}"
    return f"{shown} {AT_LEAST if value >= limit else '<'} {wanted}"


def evaluator_gates(name: str, settings: Any, stats: dict[str, Any] | None, default_error_rate: float) -> list[Gate]:
    """The gates of one evaluator over its result rows."""
    if stats is None:
        return []
    gates: list[Gate] = []
    applicable = stats["rows"] - stats["skipped"]
    limit = settings.max_error_rate if settings.max_error_rate is not None else default_error_rate
    if applicable:
        rate = stats["errors"] / applicable
        all_error = stats["errors"] == applicable
        held = not all_error and rate <= limit
        what = (
            "every applicable row is an error"
            if all_error
            else f"error rate {compared(rate, limit, upper=True, percent=True)}"
        )
        gates.append(
            Gate(
                name,
                "max_error_rate",
                rate,
                limit,
                held,
                EXIT_INCOMPLETE,
                f"{name}: {what} ({stats['errors']} of {counted(applicable, 'row')})",
            )
        )
    for gate, key in (("min_pass_rate", "pass_rate"), ("min_mean_score", "mean_score")):
        wanted = getattr(settings, gate)
        if wanted is None:
            continue
        value = stats[key]
        held = value is not None and value >= wanted
        shown = (
            compared(value, wanted, upper=False, percent=False)
            if value is not None
            else f"none (no processed rows) < {wanted:g}"
        )
        gates.append(Gate(name, gate, value, wanted, held, EXIT_GATE, f"{name}: {key.replace('_', ' ')} {shown}"))
    return gates


def judge_outcome(
    summary: pl.DataFrame,
    results: pl.DataFrame | pl.LazyFrame,
    evaluators: list[Any],
    default_error_rate: float,
    run_gates: list[Gate] | None = None,
) -> Outcome:
    """Every evaluator's gates (from the per-evaluator ``summary``), plus the run-level ones (budget, circuit
    breakers, candidate), and the most common error reasons (from ``results``)."""
    stats = {row["evaluator"]: row for row in summary.iter_rows(named=True)}
    gates: list[Gate] = list(run_gates or [])
    for evaluator in evaluators:
        gates += evaluator_gates(evaluator.name, evaluator.settings, stats.get(evaluator.name), default_error_rate)
    errors = top_errors(results) if any(row["errors"] for row in stats.values()) else {}
    return Outcome(gates=gates, top_errors=errors)


def candidate_gate(samples: pl.DataFrame | pl.LazyFrame, limit: float) -> Gate | None:
    """The model under test's failure rate (its failed rows are ``skipped`` by every evaluator), from the evaluated
    rows (``samples``; read in one streaming pass, plus one over the failed rows' reasons when there are some)."""
    lazy = samples.lazy()
    if "candidate_error" not in lazy.collect_schema().names():
        return None
    counts = lazy.select(pl.len().alias("rows"), pl.col("candidate_error").is_not_null().sum().alias("failed"))
    rows, failed = counts.collect(engine="streaming").row(0)
    if not rows:
        return None
    rate = failed / rows
    held = rate <= limit and failed < rows
    first = ""
    if failed:
        reasons = lazy.filter(pl.col("candidate_error").is_not_null()).group_by("candidate_error").len()
        top = reasons.collect(engine="streaming").sort(["len", "candidate_error"], descending=[True, False])
        first = f": most often {top.row(0)[0]!r}"
    rates = compared(rate, limit, upper=True, percent=True) + (", every generation failed" if failed == rows else "")
    message = f"candidate: {failed} of {rows} generations failed ({rates}){first}"
    return Gate("candidate", "max_error_rate", rate, limit, held, EXIT_INCOMPLETE, message)


def nothing_scored_gate(summary: pl.DataFrame, results: pl.DataFrame | pl.LazyFrame, allowed: bool) -> Gate | None:
    """The run-level gate "something was scored": no evaluator scored a single row, every row ``skipped`` (or no
    rows at all), fails it, exit 3, with the most common reason rows were skipped; ``allowed``
    (``run.allow_nothing_scored``) is for configs that mean it. ``None`` when some row was processed, or when
    rows are errors (then every evaluator with errors fails its ``max_error_rate`` gate, which says why)."""
    scored = int(summary["processed"].sum() or 0) + int(summary["errors"].sum() or 0) if summary.height else 0
    if scored:
        return None
    reason = pl.col("details").str.json_path_match("$.reason").fill_null("no reason given")
    unselected = reason.str.starts_with(NOT_SELECTED)
    counts = (
        results.lazy()
        .filter(pl.col("status") == SKIPPED)
        .select(pl.when(unselected).then(pl.lit(NOT_SELECTED)).otherwise(reason).alias("reason"))
        .group_by("reason")
        .len()
        .collect(engine="streaming")
    )
    where = int(counts.filter(pl.col("reason") == NOT_SELECTED)["len"].sum())
    other = counts.filter(pl.col("reason") != NOT_SELECTED).sort(["len", "reason"], descending=[True, False])
    rows = int(summary["rows"].sum() or 0) if summary.height else 0
    why = [f"most often skipped: {other['reason'][0]!r} ({counted(other['len'][0], 'row')})"] if other.height else []
    if where:
        why.append(f"{counted(where, 'row')} not selected by {'its' if where == 1 else 'their'} evaluator's where")
    every = {0: "there are no result rows", 1: "its one result row was skipped"}
    what = "run: nothing was scored: " + every.get(rows, f"every one of the {rows} result rows was skipped")
    what += "".join(f"; {w}" for w in why)
    hint = (
        " (allowed: run.allow_nothing_scored)"
        if allowed
        else "; set run.allow_nothing_scored=true if the config means it"
    )
    return Gate("run", "nothing_scored", 0.0, None, allowed, EXIT_INCOMPLETE, what + hint)
