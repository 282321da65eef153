"""One job of a Hydra sweep, packed so that another process (a child, a SLURM node, a Ray worker) can run it.

A :class:`JobSpec` carries what Hydra's own launchers hand their workers (the sweep's config, the job's overrides,
the task function, Hydra's singletons); it travels pickled with cloudpickle, as with Hydra's joblib launcher, and
:func:`run` runs it exactly as those launchers do. ``python -m vision_eval.launch.hydra_job`` runs the spec it
reads on its standard input and exits with the job's exit code.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.gates import EXIT_INTERNAL
from vision_eval.launch import holder


@dataclass
class JobSpec:
    """One job of a sweep: its number, its overrides and what Hydra needs to run it anywhere."""

    num: int
    overrides: list[str]
    hydra_context: Any
    """Hydra's ``HydraContext`` (the config loader and the callbacks)."""
    config: Any
    """The sweep's config (a ``DictConfig``), from which the job's own is composed."""
    task_function: Any
    singleton_state: dict[Any, Any]
    attempts_of: str | None = None
    """What every attempt of this job shares and no other job has (``ray:<sweep token>-<num>``) when a scheduler
    may run it again after an attempt died: the lock of an earlier attempt is then known to be a dead one's."""

    def pack(self) -> bytes:
        """The spec as bytes another process can run (:func:`unpack`)."""
        import cloudpickle

        data: bytes = cloudpickle.dumps(self)
        return data

    def directory(self) -> Path:
        """The job's run directory (``hydra.sweep.dir``/``hydra.sweep.subdir``, composed as the job composes it)."""
        config = self._job_config()
        return Path(str(config.hydra.sweep.dir)) / str(config.hydra.sweep.subdir)

    def _job_config(self, job_id: str | None = None) -> Any:
        from omegaconf import open_dict

        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(self.overrides))
        with open_dict(config.hydra.job):
            config.hydra.job.id = job_id or f"{config.hydra.job.name}_{self.num}"
            config.hydra.job.num = self.num
        return config


def unpack(data: bytes) -> JobSpec:
    """A spec packed by :meth:`JobSpec.pack`."""
    import pickle

    spec = pickle.loads(data)  # packed by this sweep's own process, for its own jobs
    assert isinstance(spec, JobSpec)
    return spec


def run(spec: JobSpec, job_id: str | None = None) -> Any:
    """Run the job in this process, as Hydra's launchers run a job in theirs; returns Hydra's ``JobReturn``."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.singleton import Singleton
    from hydra.core.utils import run_job, setup_globals

    setup_globals()
    Singleton.set_state(spec.singleton_state)
    if spec.attempts_of is not None:
        holder.set_job(spec.attempts_of)
    config = spec._job_config(job_id)
    HydraConfig.instance().set_config(config)
    return run_job(
        hydra_context=spec.hydra_context,
        task_function=spec.task_function,
        config=config,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )


def exit_code(job_return: Any) -> int:
    """The exit code of a finished job: what vision-eval's task returned, 4 when Hydra could not run it."""
    from hydra.core.utils import JobStatus

    value = job_return._return_value  # Hydra's .return_value raises the job's exception instead of returning it
    if job_return.status == JobStatus.COMPLETED and isinstance(value, int):
        return value
    return EXIT_INTERNAL


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While inside, SIGTERM (``scancel``, a CI cancelling its job, a sweep stopping its jobs) stops this process
    as Ctrl-C does: finished work saved, one line saying how to go on. The signal is turned into a SIGINT, so that
    whatever handles Ctrl-C handles it. Only the main thread can set a handler: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main() -> None:
    """Run the spec read from standard input; exit with the job's exit code."""
    from vision_eval.launch import hydra_job  # the module's own classes, not ``__main__``'s copies

    with sigterm_as_ctrl_c():  # how the sweep stops its jobs
        code = hydra_job.exit_code(hydra_job.run(hydra_job.unpack(sys.stdin.buffer.read())))
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
