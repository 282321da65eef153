"""Stopping a run at a known point, as Ctrl-C would, without killing a process: the interruption happens
once (a flag file records it), so the resumed run can use the very same config."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings


def interrupt_once(flag: str | Path) -> None:
    """Press Ctrl-C (a real SIGINT to this process) unless ``flag`` exists (creating it). In synchronous code the
    ``KeyboardInterrupt`` arrives at once; inside ``asyncio.run`` the runner cancels the run and raises it, as it
    does for a user's Ctrl-C."""
    path = Path(flag)
    if not path.exists():
        path.write_text("interrupted")
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the interrupt is delivered here in synchronous code


class InterruptSettings(EvaluatorSettings):
    watch: str
    """Checkpoint folder of the evaluator to watch (``<run>/checkpoint/<name>``)."""
    after: int = 1
    """Interrupt once that folder holds this many finished batches."""
    flag: str
    """File recording that the interruption happened (the next run goes through)."""


class InterruptAfter(Evaluator):
    """An async evaluator that, the first time, waits until ``watch`` holds ``after`` finished batches and then
    raises ``KeyboardInterrupt``; afterwards it scores every row 1."""

    type_name: ClassVar[str] = "interrupt_after"
    settings_model = InterruptSettings
    required_columns = ()
    is_async = True

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        settings: Any = self.settings
        if not Path(settings.flag).exists():
            folder, deadline = Path(settings.watch), time.monotonic() + 60
            while time.monotonic() < deadline:
                if folder.is_dir() and sum(not p.name.startswith(".") for p in folder.iterdir()) >= settings.after:
                    interrupt_once(settings.flag)
                    await asyncio.sleep(60)  # the runner cancels this run on the SIGINT
                await asyncio.sleep(0.01)
            raise AssertionError(f"{folder} never held {settings.after} batches")
        return EvalOutput(batch.select(pl.col("id").alias("sample_id"), pl.lit(1.0).alias("score")))


def interrupter(run_dir: Path, evaluator: str, after: int, flag: Path) -> dict[str, Any]:
    """The stack entry of an interrupter watching ``evaluator`` in ``run_dir``."""
    watch = run_dir / "checkpoint" / evaluator
    return {"_target_": f"{__name__}.InterruptAfter", "watch": str(watch), "after": after, "flag": str(flag)}
