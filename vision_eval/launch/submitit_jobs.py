"""A sweep's jobs through submitit: a SLURM job array (``hydra/launcher=slurm``) or submitit's local executor
(``hydra/launcher=local_submitit``), waited for one by one so that a job that fails or is killed is reported and
never stops the wait for the others.

SLURM jobs are followed with ``squeue`` (which answers without accounting, and sees a job end as soon as it ends);
submitit's own follow-up uses ``sacct``, which a cluster without accounting cannot answer (a killed job was then
waited for forever), and is only the fallback where ``squeue`` cannot be run. A job's process stops on SIGTERM
as on Ctrl-C (submitit ignores SIGTERM; ``scancel`` sends it), saving what it finished, and a job SLURM requeues
(a timeout, a preemption, ``scontrol requeue``) resumes its own checkpoint.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

from vision_eval.errors import Interrupted
from vision_eval.gates import EXIT_INCOMPLETE, EXIT_INTERNAL, EXIT_INTERRUPTED
from vision_eval.launch.holder import SLURM_LIVE
from vision_eval.launch.hydra_job import JobSpec, exit_code, run, sigterm_as_ctrl_c, unpack
from vision_eval.launch.processes import describe_exit
from vision_eval.launch.sweep import JobOutcome

GENERIC = frozenset({"timeout_min", "cpus_per_task", "gpus_per_node", "tasks_per_node", "mem_gb", "nodes", "name",
                     "stderr_to_stdout"})  # fmt: skip
"""Launcher settings that submitit takes as they are; the others are the cluster's own (``slurm_partition``...)."""
RESULT_GRACE_S = 15.0
"""How long after a job ended its result file may still take to appear (a network filesystem's delay)."""
POLL_S = (1.0, 10.0)
"""The first and the longest wait between two looks at the jobs."""


class SubmittedJob:
    """What submitit runs on the node: one packed job. Its ``checkpoint`` is what submitit calls before a
    timeout or a preemption requeues the job; the requeued job runs the same spec into the same directory, and so
    continues its own checkpoint."""

    def __call__(self, packed: bytes) -> Any:
        import submitit

        with sigterm_as_ctrl_c():  # scancel: submitit ignores SIGTERM, a job stops on it as on Ctrl-C
            return run(unpack(packed), job_id=str(submitit.JobEnvironment().job_id))

    def checkpoint(self, packed: bytes) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(self, packed)


def executor(cluster: str, params: dict[str, Any]) -> Any:
    """A submitit executor for ``cluster`` (``slurm`` or ``local``) with the launcher's settings."""
    import submitit

    settings = dict(params)
    init: dict[str, Any] = {"folder": settings.pop("submitit_folder")}
    if "max_num_timeout" in settings:
        init[f"{cluster}_max_num_timeout"] = settings.pop("max_num_timeout")
    made = submitit.AutoExecutor(cluster=cluster, **init)
    made.update_parameters(**{k if k in GENERIC else f"{cluster}_{k}": v for k, v in settings.items()})
    return made


def slurm_states(job_ids: list[str]) -> dict[str, str] | None:
    """SLURM's state of each job (array tasks one by one), by ``squeue``; ``None`` when it cannot be asked."""
    arrays = sorted({job.split("_")[0] for job in job_ids})
    try:
        proc = subprocess.run(
            ["squeue", "-h", "-r", "--states=all", "-o", "%i|%T", "-j", ",".join(arrays)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0 and "invalid job id" not in proc.stderr.lower():
        return None
    states = {}
    for line in proc.stdout.splitlines():
        job, _, state = line.strip().partition("|")
        states[job] = state
    return states


class _Waiter:
    """Follows one submitted job until it has an outcome."""

    def __init__(self, job: Any, spec: JobSpec, cluster: str) -> None:
        self.job, self.spec, self.cluster = job, spec, cluster
        self.ended_at: float | None = None

    def _log(self) -> str | None:
        try:
            return str(self.job.paths.stderr)
        except Exception:  # only a hint for the user
            return None

    def _result(self) -> JobOutcome:
        try:
            code = exit_code(self.job.results()[0])
        except Exception as exc:  # the job raised: that is its outcome, and the others go on
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return self._outcome(EXIT_INTERNAL, f"raised {type(exc).__name__}: {first}"[:300])
        return self._outcome(code, None)

    def _outcome(self, code: int, failure: str | None) -> JobOutcome:
        return JobOutcome(self.spec.num, self.spec.overrides, code, failure, log=self._log() if failure else None)

    def _ended_without_result(self) -> bool:
        """True once the job has ended and its result has had time to appear."""
        now = time.monotonic()
        self.ended_at = self.ended_at or now
        return now - self.ended_at >= RESULT_GRACE_S

    def settle(self, states: dict[str, str] | None) -> JobOutcome | None:
        """The job's outcome once it has one, else ``None``."""
        if self.job.paths.result_pickle.exists():
            return self._result()
        if self.cluster == "local":
            process = getattr(self.job, "_process", None)
            returncode = process.poll() if process is not None else None
            if returncode is None:
                return None
            if not self._ended_without_result():
                return None
            code, failure = describe_exit(returncode)  # submitit's controller: it ends as its task did, or with 0
            return self._outcome(code or EXIT_INCOMPLETE, failure or "it ended without a result (killed or crashed)")
        if states is None:  # no squeue: submitit's own follow-up (sacct)
            if not self.job.done():
                return None
            state = str(self.job.state)
        else:
            state = states.get(str(self.job.job_id), "gone from the queue")
            if state in SLURM_LIVE:
                self.ended_at = None
                return None
        if not self._ended_without_result():
            return None
        return self._outcome(EXIT_INTERRUPTED if state == "CANCELLED" else EXIT_INCOMPLETE, f"SLURM state {state}")


def wait(jobs: list[Any], specs: list[JobSpec], cluster: str, on_outcome: Any) -> list[JobOutcome]:
    """Every job's outcome (``on_outcome`` is called with each as it comes), in the order of ``specs``."""
    waiters = [_Waiter(job, spec, cluster) for job, spec in zip(jobs, specs, strict=True)]
    try:
        return _wait(waiters, cluster, on_outcome)
    except KeyboardInterrupt:
        if cluster != "slurm":
            raise
        ids = ",".join(sorted({str(w.job.job_id).split("_")[0] for w in waiters}))
        raise Interrupted(
            f"interrupted: the sweep stopped waiting, and its SLURM jobs go on (squeue -j {ids}; scancel {ids} "
            "stops them); merge with vision-eval-report once they end"
        ) from None


def _wait(waiters: list[_Waiter], cluster: str, on_outcome: Any) -> list[JobOutcome]:
    outcomes: dict[int, JobOutcome] = {}
    delay = POLL_S[0]
    while len(outcomes) < len(waiters):
        pending = [i for i in range(len(waiters)) if i not in outcomes]
        states = slurm_states([str(waiters[i].job.job_id) for i in pending]) if cluster == "slurm" else None
        for i in pending:
            outcome = waiters[i].settle(states)
            if outcome is not None:
                outcomes[i] = outcome
                on_outcome(outcome)
        if len(outcomes) < len(waiters):
            time.sleep(delay)
            delay = min(POLL_S[1], delay * 1.5)
    return [outcomes[i] for i in range(len(waiters))]
