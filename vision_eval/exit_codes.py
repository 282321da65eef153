"""The exit codes of ``vision-eval`` and of ``evaluate()`` (``EvalResult.exit_code``), documented once in the
README's table; a leaf module, so that the command line can exit without importing the engine. The gates that
produce them are in :mod:`vision_eval.gates`."""

from __future__ import annotations

EXIT_OK = 0
"""Every gate holds."""
EXIT_GATE = 1
"""A quality gate failed."""
EXIT_CONFIG = 2
"""A bad command line or config, a preflight error, a damaged checkpoint: nothing was evaluated."""
EXIT_INCOMPLETE = 3
"""A run problem: errors past a gate, budget, circuit breaker, nothing scored, outputs not written."""
EXIT_INTERNAL = 4
"""An internal error (a bug)."""
EXIT_INTERRUPTED = 130
"""Interrupted."""
SEVERITY = (EXIT_OK, EXIT_GATE, EXIT_INCOMPLETE, EXIT_CONFIG, EXIT_INTERNAL, EXIT_INTERRUPTED)
"""Exit codes from least to most severe (a sweep exits with the most severe of its jobs)."""
SWEEP_EXIT_CODES: list[int] = []
"""Filled when a multirun ends (by ``vision_eval.launch.sweep.SweepExitCode``): the most severe exit code of its jobs.
Kept here, not in the CLI module, because ``python -m vision_eval.cli`` runs that module as ``__main__``."""


def worst(codes: list[int]) -> int:
    """The most severe of several exit codes (unknown codes count as incomplete)."""
    ranked = [SEVERITY.index(c) if c in SEVERITY else SEVERITY.index(EXIT_INCOMPLETE) for c in codes]
    return SEVERITY[max(ranked)] if ranked else EXIT_OK
