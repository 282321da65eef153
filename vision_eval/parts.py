"""A run's finished parts, in dataset order, and everything read back from them.

The engine hands each finished part here (:meth:`Ledger.put`) and drops its batch: the part goes to its
checkpoint folder (or a temporary folder when checkpoints are off or a large run has no output directory; memory
for a small run without one). Afterwards every output is a lazy query over the parts: an evaluator's rows (for its
summary row, its ``summarize`` and ``finalize``) and metric inputs, all results in evaluator-major order as
results.parquet holds them, the evaluated rows, the extra tables. Writing an output file streams its query into
one Parquet file (Polars reads a part at a time), so nothing ever holds every row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.checkpoint import INPUT, KINDS, OPEN, TABLE, Checkpoints, Part, saved_tables
from vision_eval.evaluator import Evaluator
from vision_eval.summary import summarize_one

Order = tuple[int, int]
"""Where a part sits in dataset order: (data batch, sub-batch of a model-calling evaluator)."""


def _concat(frames: list[pl.LazyFrame], how: Any = "vertical") -> pl.LazyFrame:
    return frames[0] if len(frames) == 1 else pl.concat(frames, how=how)


class Ledger:
    """Every finished part of a run, by evaluator and dataset order, and the run's outputs read from them."""

    def __init__(self, evaluators: list[Evaluator], store: Checkpoints, run_id: str | None = None) -> None:
        self.names = [e.name for e in evaluators]
        self.store = store
        self.run_id = run_id
        self._parts: dict[str, dict[Order, Path | Part]] = {name: {} for name in self.names}
        self._samples: dict[int, Path | pl.DataFrame] = {}
        self.finalized: dict[str, dict[str, pl.DataFrame]] = {}
        """Per evaluator, the tables its ``finalize`` computed over all of its rows."""

    # --- what the engine calls ------------------------------------------------------------------------
    def reuse(self, evaluator: Evaluator, order: Order, batch: pl.DataFrame) -> pl.DataFrame | None:
        """The result rows of a part a resumed run finished before (recorded in its place), or ``None``."""
        folder = self.store.find(evaluator, batch)
        if folder is None:
            return None
        self._parts[evaluator.name][order] = folder
        return pl.read_parquet(folder / "results.part")

    def put(self, evaluator: Evaluator, order: Order, batch: pl.DataFrame, part: Part, final: bool = True) -> None:
        """Keep a finished part (``final=False``: its batch had refused calls, so no resume reuses it)."""
        part = part.conformed()
        ref = self.store.save(evaluator, batch, part, final) if self.store.on_disk else part
        self._parts[evaluator.name][order] = ref

    def put_samples(self, index: int, frame: pl.DataFrame) -> None:
        """Keep batch ``index``'s evaluated rows (as samples.parquet holds them)."""
        self._samples[index] = self.store.save_samples(index, frame) if self.store.on_disk else frame

    # --- reading back ---------------------------------------------------------------------------------
    def _refs(self, name: str) -> list[Path | Part]:
        parts = self._parts[name]
        return [parts[order] for order in sorted(parts)]

    def frame(self, kind: str, name: str | None = None) -> pl.LazyFrame:
        """``results``, ``dimensions`` or ``fields`` of one evaluator (``name``) or of all, evaluator by
        evaluator, in dataset order, with the run id filled in."""
        refs = [ref for n in ([name] if name is not None else self.names) for ref in self._refs(n)]
        schema = KINDS[kind]
        if not refs:
            lazy = pl.LazyFrame(schema=schema)
        elif isinstance(refs[0], Path):
            lazy = pl.scan_parquet([ref / f"{kind}.part" for ref in refs])  # type: ignore[operator]
        else:
            lazy = _concat([getattr(ref, kind).lazy() for ref in refs])
        return lazy.with_columns(pl.lit(self.run_id, pl.Utf8).alias("run_id"))

    def samples(self) -> pl.LazyFrame:
        """The evaluated rows in dataset order (batches that differ in a column's type or presence unified)."""
        refs = [self._samples[index] for index in sorted(self._samples)]
        if not refs:
            return pl.LazyFrame()
        frames = [pl.scan_parquet(ref) if isinstance(ref, Path) else ref.lazy() for ref in refs]
        return _concat(frames, "diagonal_relaxed")

    def _named(self, name: str, prefix: str) -> dict[str, pl.LazyFrame]:
        """One evaluator's extra tables (``prefix`` :data:`TABLE`) or metric inputs (:data:`INPUT`) over all of
        its parts, by name, in dataset order."""
        own: dict[str, list[pl.LazyFrame]] = {}
        for ref in self._refs(name):
            if isinstance(ref, Path):
                for table, path in saved_tables(ref, prefix).items():
                    own.setdefault(table, []).append(pl.scan_parquet(path))
            else:
                for table, frame in (ref.tables if prefix == TABLE else ref.inputs).items():
                    own.setdefault(table, []).append(frame.lazy())
        return {table: _concat(frames, "diagonal_relaxed") for table, frames in own.items()}

    def metric_inputs(self, name: str) -> dict[str, pl.LazyFrame]:
        """The ``metric_inputs`` of one evaluator's batches, each over all of its parts (read back from disk for a
        resumed run's reused parts as for the others)."""
        return self._named(name, INPUT)

    def tables(self) -> dict[str, pl.LazyFrame]:
        """The extra tables, each over every evaluator that made one (with an ``evaluator`` column): what its
        batches returned, or what its ``finalize`` computed under the same name."""
        out: dict[str, list[pl.LazyFrame]] = {}
        for name in self.names:
            merged = self._named(name, TABLE)
            merged.update({table: frame.lazy() for table, frame in self.finalized.get(name, {}).items()})
            for table, frame in merged.items():
                out.setdefault(table, []).append(frame.with_columns(pl.lit(name).alias("evaluator")))
        return {table: _concat(frames, "diagonal_relaxed") for table, frames in out.items()}

    def summary(self, evaluators: list[Evaluator]) -> tuple[pl.DataFrame, int]:
        """The summary row of every evaluator (one streaming pass over its own parts each) and the rows answered
        from the call cache."""
        rows, cached = [], 0
        for evaluator in evaluators:
            row, hits = summarize_one(self.frame("results", evaluator.name), evaluator.name, evaluator.type_name)
            rows.append(row)
            cached += hits
        return pl.concat(rows, how="vertical_relaxed"), cached

    def saved_parts(self) -> int:
        """Parts on disk that a resume reuses: saved by this run or reused from the one it resumes."""
        refs = (ref for parts in self._parts.values() for ref in parts.values())
        return sum(isinstance(ref, Path) and not ref.name.startswith(OPEN) for ref in refs)
