"""A sweep's jobs as Ray tasks (``hydra/launcher=ray``), retried by Ray when their worker dies (``max_retries``).
A retry runs the same job into the same directory, finds the checkpoint its dead attempt left and continues it
(:func:`vision_eval.rundir.claim_or_continue`); a job that fails for good is reported, and the others go on.
Workers are reused from job to job, as Ray does (a worker made to exit after each task, ``max_calls=1``, was seen
to abort in Ray's own shutdown code after its job had finished).
"""

from __future__ import annotations

import secrets
from typing import Any

from vision_eval.gates import EXIT_INCOMPLETE, EXIT_INTERRUPTED
from vision_eval.launch.hydra_job import JobSpec, exit_code, run, unpack
from vision_eval.launch.processes import STOP_WAIT_S, WAKE_S
from vision_eval.launch.sweep import JobOutcome


def run_task(packed: bytes) -> int:
    """One job, in a Ray worker."""
    return exit_code(run(unpack(packed)))


def _failure(exc: BaseException, retries: int) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    tries = f" ({retries + 1} attempts)" if retries else ""
    return f"{type(exc).__name__}: {first}"[:300] + tries


def run_on_ray(
    specs: list[JobSpec], address: str | None, num_cpus: float, max_retries: int, init: dict[str, Any],
    on_outcome: Any,
) -> list[JobOutcome]:  # fmt: skip
    """Every job's outcome, in the order of ``specs`` (``on_outcome`` is called with each as it comes). Ray is
    started on this machine when ``address`` is ``None`` and no Ray is running in this process, and stopped after."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, **init)
    task = ray.remote(run_task)
    sweep = secrets.token_hex(6)
    refs = []
    for spec in specs:
        spec.attempts_of = f"ray:{sweep}-{spec.num}"  # a retry runs the same spec: it knows its dead attempt's lock
        options = {"num_cpus": num_cpus, "max_retries": max_retries, "name": f"vision-eval job {spec.num}"}
        refs.append(task.options(**options).remote(spec.pack()))
    pending = dict(zip(refs, specs, strict=True))
    try:
        outcomes: dict[int, JobOutcome] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAKE_S)  # a timeout: Ctrl-C is seen
            for ref in ready:
                spec = pending.pop(ref)
                try:
                    outcome = JobOutcome(spec.num, spec.overrides, int(ray.get(ref)))
                except ray.exceptions.RayError as exc:
                    outcome = JobOutcome(spec.num, spec.overrides, EXIT_INCOMPLETE, _failure(exc, max_retries))
                on_outcome(outcome)
                outcomes[spec.num] = outcome
        return [outcomes[spec.num] for spec in specs]
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref)  # each job stops as on Ctrl-C and keeps what it finished
        for ref, spec in pending.items():
            try:
                outcome = JobOutcome(spec.num, spec.overrides, int(ray.get(ref, timeout=STOP_WAIT_S)))
            except ray.exceptions.RayError:
                outcome = JobOutcome(spec.num, spec.overrides, EXIT_INTERRUPTED)  # its directory says what is kept
            on_outcome(outcome, stopping=True)
        raise
    finally:
        if started:
            ray.shutdown()
