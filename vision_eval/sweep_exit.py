"""The Hydra callback that gives a sweep its exit code (``conf/config.yaml``: ``hydra.callbacks``); its own module, so
that the command line imports Hydra only when it runs Hydra."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from vision_eval.exit_codes import EXIT_INCOMPLETE, SWEEP_EXIT_CODES, worst


class SweepExitCode(Callback):
    """Hydra callback: when a multirun ends, the most severe exit code of its jobs (read from their run.json)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        codes = []
        for info in Path(str(config.hydra.sweep.dir)).glob("*/run.json"):
            try:
                codes.append(int(json.loads(info.read_text(encoding="utf-8")).get("exit_code", 0)))
            except (OSError, ValueError):
                codes.append(EXIT_INCOMPLETE)
        SWEEP_EXIT_CODES.append(worst(codes))
