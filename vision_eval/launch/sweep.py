"""How a sweep ends: every job's outcome, the exit code, and last lines that name each job that did not finish with
the command that finishes it.

vision-eval's launchers (``hydra/launcher=local_parallel|joblib|local_submitit|slurm|ray``) run each job in its own
process and wait for every job whatever the others do; they :func:`report` each job's outcome here, including jobs
that died without a word (killed, out of memory, cancelled). When the sweep ends, :class:`SweepExitCode` (a Hydra
callback) prints the summary and sets the sweep's exit code: the most severe of its jobs' codes, a job that did not
finish counting as at least 3 (README, "In CI and on clusters"). Hydra's basic launcher runs jobs in this process:
there, the jobs' ``run.json`` files are the outcomes.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from vision_eval.config import redact_override
from vision_eval.errors import Interrupted
from vision_eval.gates import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, SWEEP_EXIT_CODES, worst

PREFIX = "vision-eval: sweep"
CONFIG_FLAGS = ("--config-dir", "-cd", "--config-name", "-cn", "--config-path", "-cp")
"""Command-line flags (each with a value) that a job's resume command must repeat: they choose the config."""


@dataclass
class JobOutcome:
    """How one job of a sweep ended, as its launcher saw it."""

    num: int
    overrides: list[str]
    """The job's overrides, as Hydra composed them."""
    exit_code: int
    """The job's exit code; a job that died without one counts as 3 (or 130 when it was cancelled)."""
    failure: str | None = None
    """How the job died, when it did not end by itself: ``killed by signal 9 (SIGKILL)``, ``SLURM state FAILED``."""
    directory: Path | None = None
    """The job's run directory."""
    log: str | None = None
    """Where the job's own output went, when the launcher kept it in a file."""


REPORTED: list[JobOutcome] = []
"""The outcomes the launcher reported during this sweep (read and cleared when the sweep ends)."""


def report(outcome: JobOutcome, sweep: list[list[str]], stopping: bool = False) -> None:
    """Record a job's outcome (``sweep``: every job's overrides); a job that died says so at once, while the
    other jobs go on (not when the whole sweep is being stopped: :func:`stopped` says it all then)."""
    REPORTED.append(outcome)
    if outcome.failure is not None and not stopping:
        where = f"; its log: {outcome.log}" if outcome.log else ""
        name = _name(outcome.num, outcome.overrides, sweep)
        print(f"{PREFIX}: job {name} failed: {outcome.failure}{where}", file=sys.stderr)


@dataclass
class _Job:
    num: int
    directory: Path
    overrides: list[str]
    exit_code: int
    failure: str | None = None
    log: str | None = None
    problem: str | None = None
    finished: bool = True


def _name(num: int, overrides: list[str], sweep: list[list[str]]) -> str:
    """A job named by its number and the overrides that tell it apart from the sweep's other jobs."""
    sets = [set(job) for job in sweep]
    varying = set[str]().union(*sets) - sets[0].intersection(*sets[1:]) if sets else set()
    shown = [redact_override(o.removeprefix("++")) for o in overrides if o in varying]
    return f"{num}" + (f" ({' '.join(shown)})" if shown else "")


def _config_flags(argv: list[str]) -> list[str]:
    flags: list[str] = []
    for index, arg in enumerate(argv):
        if arg in CONFIG_FLAGS and index + 1 < len(argv):
            flags += [arg, argv[index + 1]]
        elif arg.startswith(tuple(f"{flag}=" for flag in CONFIG_FLAGS)):
            flags.append(arg)
    return flags


def resume_command(overrides: list[str], directory: Path, argv: list[str] | None = None) -> str:
    """The command that finishes one job where it stopped: its checkpoint resumed (``run.resume``), or, when it
    died before writing one, the job run again into its own directory."""
    argv = sys.argv[1:] if argv is None else argv
    checkpointed = (directory / "checkpoint" / "manifest.json").is_file()
    where = f"run.resume={directory}" if checkpointed else f"hydra.run.dir={directory}"
    words = [*_config_flags(argv), *(redact_override(o.removeprefix("++")) for o in overrides), where]
    return " ".join(["vision-eval", *(shlex.quote(word) for word in words)])


def _read_run(directory: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((directory / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _job(directory: Path, num: int, overrides: list[str], code: int, failure: str | None, log: str | None) -> _Job:
    info = _read_run(directory)
    problems = (info or {}).get("problems") or []
    checkpointed = (directory / "checkpoint" / "manifest.json").is_file()
    finished = failure is None and info is not None and not checkpointed and code != EXIT_INTERRUPTED
    if failure is not None or info is None:
        said = "interrupted" if code == EXIT_INTERRUPTED else f"it exited with code {code} without writing run.json"
        failure = failure or said
        code = worst([code, EXIT_INCOMPLETE])
    return _Job(num, directory, overrides, code, failure, log, str(problems[0]) if problems else None, finished)


def _jobs_from_runs(sweep_dir: Path) -> list[_Job]:
    """The outcomes of a sweep whose jobs ran in this process (Hydra's basic launcher): their run.json files."""
    jobs = []
    for index, info_path in enumerate(sorted(sweep_dir.glob("*/run.json"))):
        info = _read_run(info_path.parent)
        code = int(info.get("exit_code", EXIT_INCOMPLETE)) if info else EXIT_INCOMPLETE
        num = int(info_path.parent.name) if info_path.parent.name.isdigit() else index
        overrides = [str(o) for o in (info or {}).get("overrides", [])]
        jobs.append(_job(info_path.parent, num, overrides, code, None if info else "its run.json is unreadable", None))
    return jobs


def conclude(sweep_dir: Path, outcomes: list[JobOutcome], argv: list[str] | None = None) -> tuple[int, list[str]]:
    """The sweep's exit code and its last lines, from the launcher's outcomes (or, when it reported none, from
    the jobs' run.json files)."""
    if outcomes:
        jobs = [
            _job(o.directory or sweep_dir / str(o.num), o.num, o.overrides, o.exit_code, o.failure, o.log)
            for o in sorted(outcomes, key=lambda o: o.num)
        ]
    else:
        jobs = _jobs_from_runs(sweep_dir)
    lines = []
    sweep = [job.overrides for job in jobs]
    for job in jobs:
        name = _name(job.num, job.overrides, sweep)
        if not job.finished:
            why = job.failure or job.problem or f"exit {job.exit_code}"
            lines.append(f"{PREFIX}: job {name} did not finish: {why}")
            lines.append(f"{PREFIX}:   finish it: {resume_command(job.overrides, job.directory, argv)}")
        elif job.exit_code != EXIT_OK:
            lines.append(f"{PREFIX}: job {name} exit {job.exit_code}: {job.problem or 'see its run.json'}")
    code = worst([job.exit_code for job in jobs])
    unfinished = [job for job in jobs if not job.finished]
    told = f"{len(jobs) - len(unfinished)} of {len(jobs)} jobs finished"
    if unfinished:
        told += f"; not finished: job {', '.join(str(job.num) for job in unfinished)} (commands above)"
    lines.append(f"{PREFIX} exit {code}: {told}; results in {sweep_dir}")
    return code, lines


def stopped(sweep_dir: Path) -> Interrupted:
    """The sweep was interrupted (Ctrl-C) and its launcher stopped its jobs: print what became of each and the
    commands that finish them; returns the interrupt to raise (exit 130, its hint the sweep's last line)."""
    outcomes = list(REPORTED)
    REPORTED.clear()
    _, lines = conclude(sweep_dir, outcomes)
    for line in lines[:-1]:
        print(line, file=sys.stderr)
    unfinished = lines[-1].partition("; not finished: ")[2].partition(" (commands above)")[0]
    hint = f"the commands above finish {unfinished}" if unfinished else "every job had finished"
    return Interrupted(f"interrupted: the sweep's jobs were stopped, each keeping what it finished; {hint}")


class SweepExitCode(Callback):
    """Hydra callback: when a multirun ends, print which jobs did not finish (with the command that finishes each)
    and set the sweep's exit code, the most severe of its jobs'."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        outcomes = list(REPORTED)
        REPORTED.clear()
        code, lines = conclude(Path(str(config.hydra.sweep.dir)), outcomes)
        for line in lines:
            print(line, file=sys.stderr)
        SWEEP_EXIT_CODES.append(code)
