"""The launchers behind ``hydra/launcher=local_parallel|joblib`` (:class:`ProcessLauncher`), ``local_submitit``
and ``slurm`` (:class:`SubmititLocalLauncher`, :class:`SubmititSlurmLauncher`) and ``ray`` (:class:`RayLauncher`).

They share one failure story: every job runs in a process of its own, the launcher waits for every job whatever
the others do, and each job's outcome (its exit code, or how it died) is reported to
:mod:`vision_eval.launch.sweep`, which ends the sweep with the failed jobs, the command that finishes each and the
most severe exit code. Heavy imports (submitit, Ray, vision_eval itself) wait until a sweep is launched: Hydra
imports this module whenever it looks for plugins.
"""

# No ``from __future__ import annotations``: Hydra loads this module without registering it in sys.modules, and
# dataclasses then cannot resolve annotations given as strings.
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


@dataclass
class ProcessLauncherConf:
    """The settings of :class:`ProcessLauncher` (``conf/hydra/launcher/local_parallel.yaml``, ``joblib.yaml``)."""

    _target_: str = "hydra_plugins.vision_eval_launchers.launchers.ProcessLauncher"
    n_jobs: int = -1


@dataclass
class RayLauncherConf:
    """The settings of :class:`RayLauncher` (``conf/hydra/launcher/ray.yaml``)."""

    _target_: str = "hydra_plugins.vision_eval_launchers.launchers.RayLauncher"
    address: str | None = None
    num_cpus: float = 1
    max_retries: int = 2
    init: dict[str, Any] = field(default_factory=dict)


# Typed schemas, so that a bad setting (hydra.launcher.n_jobs=abc) is refused when the config is composed; their
# names differ from the option files' (a file named like a schema would be matched to it, with a warning).
ConfigStore.instance().store(group="hydra/launcher", name="vision_eval_processes", node=ProcessLauncherConf,
                             provider="vision_eval")  # fmt: skip
ConfigStore.instance().store(group="hydra/launcher", name="vision_eval_ray", node=RayLauncherConf,
                             provider="vision_eval")  # fmt: skip


class _SweepLauncher(Launcher):
    """What the launchers share: the jobs as specs, their outcomes reported, Hydra's ``JobReturn`` for each."""

    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def _specs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int, where: str) -> list[Any]:
        from hydra.core.singleton import Singleton
        from hydra.core.utils import configure_log, filter_overrides, setup_globals

        from vision_eval.launch.hydra_job import JobSpec

        assert self.config is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        log.info(f"Launching {len(job_overrides)} jobs {where}, each in its own process")
        specs = []
        for index, overrides in enumerate(job_overrides):
            num = initial_job_idx + index
            log.info(f"\t#{num} : {' '.join(filter_overrides(overrides))}")
            state = Singleton.get_state()
            specs.append(JobSpec(num, list(overrides), self.hydra_context, self.config, self.task_function, state))
        return specs

    @staticmethod
    def _reporter(specs: list[Any]) -> Any:
        from vision_eval.launch.sweep import report

        by_num = {spec.num: spec for spec in specs}
        sweep = [spec.overrides for spec in specs]

        def on_outcome(outcome: Any, stopping: bool = False) -> None:
            outcome.directory = by_num[outcome.num].directory()
            report(outcome, sweep, stopping)

        return on_outcome

    @contextmanager
    def _stopped_on_interrupt(self) -> Iterator[None]:
        """Ctrl-C: the launcher has stopped the jobs; say what became of each and how to finish it (exit 130)."""
        from vision_eval.launch.sweep import stopped

        assert self.config is not None
        try:
            yield
        except KeyboardInterrupt:
            raise stopped(Path(str(self.config.hydra.sweep.dir))) from None

    @staticmethod
    def _returns(outcomes: list[Any]) -> list[JobReturn]:
        """Hydra's record of each job: completed, with its exit code (a failed one would make Hydra raise)."""
        return [
            JobReturn(overrides=o.overrides, status=JobStatus.COMPLETED, _return_value=o.exit_code) for o in outcomes
        ]


class ProcessLauncher(_SweepLauncher):
    """Jobs on this machine, ``n_jobs`` at a time (joblib's meaning: -1 is every core), each in a child process."""

    def __init__(self, n_jobs: int = -1, **joblib_settings: Any) -> None:
        super().__init__()  # joblib_settings: those of Hydra's joblib launcher, when both are installed; unused
        self.n_jobs = n_jobs

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from joblib import effective_n_jobs

        from vision_eval.launch.processes import ProcessRunner

        parallel = min(effective_n_jobs(self.n_jobs), len(job_overrides))
        specs = self._specs(job_overrides, initial_job_idx, f"on this machine, {parallel} at a time")
        with self._stopped_on_interrupt():
            return self._returns(ProcessRunner(parallel).run(specs, self._reporter(specs)))


class _SubmititLauncher(_SweepLauncher):
    _CLUSTER = "abstract"

    def __init__(self, **params: Any) -> None:
        super().__init__()
        self.params = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
                       for k, v in params.items()}  # fmt: skip

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from vision_eval.launch import submitit_jobs

        where = "as a SLURM job array" if self._CLUSTER == "slurm" else "through submitit's local executor"
        specs = self._specs(job_overrides, initial_job_idx, where)
        executor = submitit_jobs.executor(self._CLUSTER, self.params)
        jobs = executor.map_array(submitit_jobs.SubmittedJob(), [spec.pack() for spec in specs])
        return self._returns(submitit_jobs.wait(jobs, specs, self._CLUSTER, self._reporter(specs)))


class SubmititLocalLauncher(_SubmititLauncher):
    """submitit's local executor: the SLURM path, on this machine."""

    _CLUSTER = "local"


class SubmititSlurmLauncher(_SubmititLauncher):
    """A SLURM job array through submitit."""

    _CLUSTER = "slurm"


class RayLauncher(_SweepLauncher):
    """Each job a Ray task in a fresh worker; a job whose worker dies is retried and resumes its own checkpoint."""

    def __init__(self, address: str | None = None, num_cpus: float = 1, max_retries: int = 2, init: Any = None) -> None:
        super().__init__()
        self.address, self.num_cpus, self.max_retries = address, num_cpus, max_retries
        given = OmegaConf.to_container(init, resolve=True) if OmegaConf.is_config(init) else init
        self.init = cast(dict[str, Any], given or {})

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from vision_eval.launch.ray_jobs import run_on_ray

        where = f"as Ray tasks ({self.address or 'Ray on this machine'})"
        specs = self._specs(job_overrides, initial_job_idx, where)
        with self._stopped_on_interrupt():
            outcomes = run_on_ray(specs, self.address, self.num_cpus, self.max_retries, self.init,
                                  self._reporter(specs))  # fmt: skip
        return self._returns(outcomes)
