"""Live progress of a run: a rich bar on a terminal, one plain line per active evaluator every
``run.progress_interval_s`` seconds otherwise (CI jobs, SLURM logs, nohup), and a line when each finishes::

    describe_judge 1234/20000 (6%) 41 rows/s ETA 6m48s errors 3 tokens 1.2M $0.42

With batch judges (``judge.batch: true``) the line ends with the run's provider batch jobs::

    describe_judge 0/20000 (0%) 0.0 rows/s ETA ? errors 0 jobs 20 submitted / 18 in progress / 2 done

The engine reports each finished batch (:meth:`Progress.advance` with its result rows), and the rows settled
while it isolates the rows that make an evaluator raise (:meth:`Progress.isolating`: that batch's report then
counts only the rest); the candidate reports each generated row; ``jobs`` (set by the run) says how the batch
jobs stand. Counters are guarded by a lock: the sync engine, the event loop and the printing thread all touch them.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import polars as pl

from vision_eval.results import ERROR


@dataclass
class Track:
    """The counters of one evaluator (or the candidate)."""

    name: str
    total: int
    done: int = 0
    errors: int = 0
    tokens: int = 0
    cost: float | None = None
    started: float | None = None
    finished: float | None = None

    def line(self, now: float) -> str:
        """``name done/total (pct) rate ETA errors tokens $``."""
        elapsed = max((self.finished or now) - (self.started or now), 1e-9)
        pct = self.done / self.total if self.total else 1.0
        parts = [f"{self.name} {self.done}/{self.total} ({pct:.0%})"]
        rate = self.done / elapsed
        if self.finished is not None:
            parts.append(f"done in {_duration(elapsed)}")
        else:
            parts.append(f"{_rate(rate)} rows/s")
            parts.append(f"ETA {_duration((self.total - self.done) / rate) if rate > 0 else '?'}")
        parts.append(f"errors {self.errors}")
        if self.tokens:
            parts.append(f"tokens {_count(self.tokens)}")
        if self.cost is not None:
            parts.append(_dollars(self.cost))
        return " ".join(parts)


def _rate(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _count(value: int) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return str(value)


def _dollars(value: float) -> str:
    return f"${value:.2f}" if value >= 1 else f"${value:.4f}"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def jobs_text(counts: Any) -> str:
    """``jobs 3 submitted / 2 in progress / 1 done`` (jobs found running from a killed attempt are counted as
    submitted, and said so)."""
    if counts is None:
        return ""
    submitted = counts.submitted + counts.resumed
    resumed = f" ({counts.resumed} resumed)" if counts.resumed else ""
    return f"jobs {submitted} submitted{resumed} / {counts.running} in progress / {counts.done} done"


def batch_counts(results: pl.DataFrame) -> dict[str, Any]:
    """What a finished batch adds: rows, errors, tokens, dollars (``None`` when no price is known)."""
    if not results.height:
        return {"rows": 0, "errors": 0, "tokens": 0, "cost": None}
    cost = results["cost_usd"]
    return {
        "rows": results.height,
        "errors": int((results["status"] == ERROR).sum()),
        "tokens": int(results["input_tokens"].sum() or 0) + int(results["output_tokens"].sum() or 0),
        "cost": float(cost.sum()) if cost.is_not_null().any() else None,
    }


class Progress:
    """Counters per evaluator; shown by a bar (``mode="bar"``), plain lines (``"lines"``) or not at all."""

    def __init__(self, mode: str | None = None, interval_s: float = 30.0, stream: TextIO | None = None) -> None:
        self.mode = mode
        self.interval_s = interval_s
        self.stream = stream or sys.stderr
        self.tracks: dict[str, Track] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._early: dict[str, list[int]] = {}
        """Per evaluator: rows and errors reported while isolating, not yet part of a finished batch's report."""
        self.jobs: Callable[[], Any] | None = None
        """Where the counts of the run's provider batch jobs come from (``Scheduler.batch_jobs``)."""

    @staticmethod
    def choose(setting: bool | None, interval_s: float) -> Progress:
        """The reporter ``run.progress`` asks for: ``False`` none; else a bar on a terminal, lines otherwise."""
        if setting is False:
            return Progress(None)
        return Progress("bar" if sys.stderr.isatty() else "lines", interval_s)

    # --- what the engine calls -------------------------------------------------------------------------
    def add(self, name: str, total: int) -> None:
        with self._lock:
            self.tracks[name] = Track(name, total)
        if self._bar is not None:
            self._tasks[name] = self._bar.add_task(name, total=total, start=False, status="")

    def begin(self, name: str) -> None:
        with self._lock:
            track = self.tracks[name]
            track.started = track.started or time.monotonic()
        if self._bar is not None:
            self._bar.start_task(self._tasks[name])

    def advance(self, name: str, rows: int, errors: int = 0, tokens: int = 0, cost: float | None = None) -> None:
        with self._lock:
            track = self.tracks[name]
            track.started = track.started or time.monotonic()
            track.done += rows
            track.errors += errors
            track.tokens += tokens
            if cost is not None:
                track.cost = (track.cost or 0.0) + cost
            status = self._status(track)
        if self._bar is not None:
            self._bar.update(self._tasks[name], advance=rows, status=status)

    def isolating(self, name: str, rows: int, errors: int) -> None:
        """Rows settled (``errors`` of them errors) while a batch's rows that make an evaluator raise are isolated,
        counted now; the batch's own report counts only the rest."""
        with self._lock:
            early = self._early.setdefault(name, [0, 0])
            early[0] += rows
            early[1] += errors
        self.advance(name, rows, errors)

    def advance_batch(self, name: str, results: pl.DataFrame) -> None:
        counts = batch_counts(results)
        with self._lock:
            early = self._early.get(name)
            if early is not None:
                for index, key in enumerate(("rows", "errors")):
                    counted = min(early[index], counts[key])
                    counts[key] -= counted
                    early[index] -= counted
        self.advance(name, **counts)

    def end(self, name: str) -> None:
        with self._lock:
            track = self.tracks[name]
            track.finished = time.monotonic()
            line = self._with_jobs(track.line(track.finished))
        if self.mode == "lines":
            self._print(line)

    # --- showing ---------------------------------------------------------------------------------------
    def _with_jobs(self, line: str) -> str:
        extra = jobs_text(self.jobs()) if self.jobs is not None else ""
        return f"{line} {extra}" if extra else line

    def _status(self, track: Track) -> str:
        elapsed = time.monotonic() - (track.started or time.monotonic())
        parts = [f"{_rate(track.done / elapsed)} rows/s"] if elapsed > 0 else []
        parts.append(f"errors {track.errors}")
        if track.tokens:
            parts.append(f"tokens {_count(track.tokens)}")
        if track.cost is not None:
            parts.append(_dollars(track.cost))
        return self._with_jobs(" ".join(parts))

    def _print(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval_s):
            now = time.monotonic()
            with self._lock:
                active = [t for t in self.tracks.values() if t.started is not None and t.finished is None]
                lines = [self._with_jobs(t.line(now)) for t in active]
            for line in lines:
                self._print(line)

    def __enter__(self) -> Progress:
        if self.mode == "bar":
            from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            self._bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[status]}"),
                transient=False,
            )
            for name, track in self.tracks.items():
                self._tasks[name] = self._bar.add_task(name, total=track.total, start=False, status="")
            self._bar.start()
        elif self.mode == "lines":
            self._thread = threading.Thread(target=self._tick, name="vision-eval-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1)
        if self._bar is not None:
            self._bar.stop()
