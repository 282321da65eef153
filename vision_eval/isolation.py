"""An evaluator that raises on a batch is re-run on parts of it, so only the rows that make it raise are ``error``
rows (each with its own exception) and no good row ever carries another row's error, at a bounded cost.

Halving a failing batch down to single rows costs about ``log2(rows)`` passes over the batch when the bad rows are
spread out (a 20,000-row batch with 10% bad rows: 11 passes). Instead the batch is scored in chunks and a chunk that
raises is scored row by row, so each row is scored at most three times (the batch, its chunk, itself). The chunk
size follows the share of bad rows met so far: about ``1/sqrt(share)`` rows, the fewest evaluator calls when bad
rows are spread out (Dorfman's group testing), row by row once a third of the rows are bad. An evaluator that raises
on most rows tried alone is not isolated further: its remaining rows are errors with the exception it raised for
them, saying so. ``report`` (rows, errors) is told as rows are settled, so progress moves while isolating.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator
from vision_eval.results import ERROR, to_json
from vision_eval.wording import counted

Report = Callable[[int, int], None]
"""Told ``(rows, errors)`` as rows are settled while isolating."""
MAX_CHUNK = 128
"""The first chunk's size (before any bad row is met), and the largest."""
ROW_BY_ROW_SHARE = 0.3
"""From this share of bad rows on, rows are scored one by one (a chunk would almost always raise)."""
ASYNC_CHUNK = 8
"""Rows per chunk of an async (model-graded) evaluator: its chunks run at once, so the size cannot follow."""
MOSTLY_FAILING = 0.75
"""An evaluator that raises on this share of the rows tried alone (after :data:`TRIED_BEFORE_GIVING_UP`) is not
isolated further."""
TRIED_BEFORE_GIVING_UP = 64
REPORT_EVERY_S = 0.2


def _stack(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """``pl.concat(frames, how="diagonal_relaxed")`` (row order aside), the frames of one schema stacked first: for
    the thousands of one-row frames isolating leaves, 25 times faster."""
    groups: dict[tuple[tuple[str, pl.DataType], ...], list[pl.DataFrame]] = {}
    for frame in frames:
        groups.setdefault(tuple(frame.schema.items()), []).append(frame)
    stacked = [pl.concat(group, how="vertical") if len(group) > 1 else group[0] for group in groups.values()]
    return stacked[0] if len(stacked) == 1 else pl.concat(stacked, how="diagonal_relaxed")


def concat_outputs(outputs: list[EvalOutput]) -> EvalOutput:
    """One output from the outputs of several sub-batches (each may have its own columns), conformed once."""
    return EvalOutput(
        results=_stack([o.results for o in outputs]),
        dimensions=_stack([o.dimensions for o in outputs if o.dimensions is not None])
        if any(o.dimensions is not None for o in outputs)
        else None,
        fields=_stack([o.fields for o in outputs if o.fields is not None])
        if any(o.fields is not None for o in outputs)
        else None,
        tables={
            k: _stack([o.tables[k] for o in outputs if k in o.tables]) for k in {k for o in outputs for k in o.tables}
        },
        metric_inputs={
            k: _stack([o.metric_inputs[k] for o in outputs if k in o.metric_inputs])
            for k in {k for o in outputs for k in o.metric_inputs}
        },
    ).conformed()


@dataclass
class _Isolation:
    """What isolating collects: the outputs of the parts that scored, and per row that raised its id, reason and
    exception type (frames are built once, at the end); with the counts that steer it."""

    report: Report | None
    outputs: list[EvalOutput] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    examined: int = 0
    """Rows whose verdict is known (in a chunk that scored, or tried alone)."""
    tried_alone: int = 0
    raised_alone: int = 0
    pending: list[int] = field(default_factory=lambda: [0, 0])
    """Rows and errors settled since ``report`` was last told."""
    told: float = field(default_factory=time.monotonic)

    def scored(self, output: EvalOutput, rows: int) -> None:
        self.outputs.append(output)
        self.examined += rows
        self._tell(rows, 0)

    def raised(self, piece: pl.DataFrame, exc: BaseException, note: str = "") -> None:
        """Every row of ``piece`` is an error with ``exc`` (a single row tried alone, unless ``note`` says why not)."""
        reason = f"evaluator raised {type(exc).__name__}: {exc}{note}"
        self.ids += [str(i) for i in piece["id"]]
        self.reasons += [reason] * piece.height
        self.kinds += [type(exc).__name__] * piece.height
        if not note:
            self.examined += piece.height
            self.raised_alone += piece.height
        self._tell(piece.height, piece.height)

    def alone(self) -> None:
        self.tried_alone += 1

    def chunk_size(self) -> int:
        """Rows in the next chunk: about ``1/sqrt(share of bad rows met)``, one once a third of them are bad."""
        if not self.raised_alone:
            return MAX_CHUNK
        share = self.raised_alone / max(self.examined, 1)
        return 1 if share >= ROW_BY_ROW_SHARE else max(1, min(MAX_CHUNK, round(1 / math.sqrt(share))))

    def mostly_failing(self) -> bool:
        return self.tried_alone >= TRIED_BEFORE_GIVING_UP and self.raised_alone >= MOSTLY_FAILING * self.tried_alone

    def not_isolated(self) -> str:
        return (
            f" (rows not isolated one by one: the evaluator raised on {self.raised_alone} of the "
            f"{counted(self.tried_alone, 'row')} tried alone)"
        )

    def _tell(self, rows: int, errors: int) -> None:
        """Counts for ``report``, handed over a few times a second (a call per row would cost as much as the row)."""
        self.pending[0] += rows
        self.pending[1] += errors
        now = time.monotonic()
        if now - self.told >= REPORT_EVERY_S:
            self._flush(now)

    def _flush(self, now: float) -> None:
        if self.report is not None and self.pending[0]:
            self.report(self.pending[0], self.pending[1])
        self.pending, self.told = [0, 0], now

    def output(self) -> EvalOutput:
        self._flush(time.monotonic())
        if self.ids:
            details = [to_json({"exception": kind}) for kind in self.kinds]
            frame = pl.DataFrame({"sample_id": self.ids, "error": self.reasons, "details": details})
            self.outputs.append(EvalOutput(frame.with_columns(pl.lit(ERROR).alias("status"))))
        return concat_outputs(self.outputs)


def _rows(batch: pl.DataFrame) -> list[pl.DataFrame]:
    return [batch[i : i + 1] for i in range(batch.height)]


def run_guarded(evaluator: Evaluator, batch: pl.DataFrame, report: Report | None = None) -> EvalOutput:
    """``evaluator.evaluate(batch)``; when it raises, the rows that make it raise are isolated (module docstring)."""
    try:
        return evaluator.evaluate(batch).conformed()
    except Exception:  # an evaluator bug or bad row must not stop the run, nor cost a good row
        found = _Isolation(report)
        start = 0
        while start < batch.height:
            if found.mostly_failing():
                _give_up(evaluator, batch[start:], found)
                break
            piece = batch.slice(start, found.chunk_size())
            start += piece.height
            if piece.height == 1:
                _alone_sync(evaluator, piece, found)
                continue
            try:
                found.scored(evaluator.evaluate(piece), piece.height)
            except Exception as exc:
                for index, row in enumerate(_rows(piece)):
                    if found.mostly_failing():
                        found.raised(piece[index:], exc, found.not_isolated())
                        break
                    _alone_sync(evaluator, row, found)
        return found.output()


def _alone_sync(evaluator: Evaluator, row: pl.DataFrame, found: _Isolation) -> None:
    found.alone()
    try:
        found.scored(evaluator.evaluate(row), 1)
    except Exception as exc:
        found.raised(row, exc)


def _give_up(evaluator: Evaluator, rest: pl.DataFrame, found: _Isolation) -> None:
    """The rows not yet examined, scored together once more: their errors when they raise."""
    try:
        found.scored(evaluator.evaluate(rest), rest.height)
    except Exception as exc:
        found.raised(rest, exc, found.not_isolated())


async def arun_guarded(evaluator: Evaluator, batch: pl.DataFrame, report: Report | None = None) -> EvalOutput:
    """:func:`run_guarded` for an async evaluator: its chunks, then the rows of a chunk that raises, run at once."""
    try:
        return (await evaluator.aevaluate(batch)).conformed()
    except Exception:
        found = _Isolation(report)
        chunks = [batch.slice(start, ASYNC_CHUNK) for start in range(0, batch.height, ASYNC_CHUNK)]
        await asyncio.gather(*(_chunk_async(evaluator, chunk, found) for chunk in chunks))
        return found.output()


async def _chunk_async(evaluator: Evaluator, chunk: pl.DataFrame, found: _Isolation) -> None:
    try:
        found.scored(await evaluator.aevaluate(chunk), chunk.height)
    except Exception as exc:
        if found.mostly_failing():
            found.raised(chunk, exc, found.not_isolated())
            return
        await asyncio.gather(*(_alone_async(evaluator, row, found) for row in _rows(chunk)))


async def _alone_async(evaluator: Evaluator, row: pl.DataFrame, found: _Isolation) -> None:
    found.alone()
    try:
        found.scored(await evaluator.aevaluate(row), 1)
    except Exception as exc:
        found.raised(row, exc)
