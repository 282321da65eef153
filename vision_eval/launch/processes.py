"""A sweep's jobs on this machine, each in a process of its own, a few at a time: a job that is killed or crashes
ends alone, and the others go on (a process pool, joblib's included, breaks as a whole when one worker dies).

Ctrl-C or SIGTERM stops every job (each is sent SIGTERM, on which it stops as on Ctrl-C): each saves what it
finished, then the sweep says what became of each job and how to finish it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from vision_eval.gates import EXIT_INCOMPLETE, EXIT_INTERRUPTED
from vision_eval.launch.hydra_job import JobSpec, sigterm_as_ctrl_c
from vision_eval.launch.sweep import JobOutcome

STOP_WAIT_S = 120
"""How long a stopped sweep waits for its jobs to save their work and exit."""
WAKE_S = 0.5
"""How often the waiting sweep wakes (a signal that arrives on another thread is seen then)."""


def signal_name(number: int) -> str:
    """``signal 9 (SIGKILL)``."""
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def describe_exit(returncode: int) -> tuple[int, str | None]:
    """A job process's return code as (exit code, how it died): a negative code is a signal that killed it."""
    if returncode < 0:
        killed = -returncode
        code = EXIT_INTERRUPTED if killed in (signal.SIGINT, signal.SIGTERM) else EXIT_INCOMPLETE
        return code, f"killed by {signal_name(killed)}"
    return returncode, None


class ProcessRunner:
    """Runs job specs in child processes (``python -m vision_eval.launch.hydra_job``), ``parallel`` at a time."""

    def __init__(self, parallel: int) -> None:
        self.parallel = max(1, parallel)
        self._live: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopping = False

    def _run_one(self, spec: JobSpec) -> JobOutcome:
        command = [sys.executable, "-m", "vision_eval.launch.hydra_job"]
        with self._lock:  # no job starts once the sweep is being stopped
            if self._stopping:
                return JobOutcome(spec.num, spec.overrides, EXIT_INTERRUPTED, "not started: the sweep was stopped")
            # a group of its own: Ctrl-C reaches the sweep, which stops the jobs with SIGTERM (a job stops on it as
            # on Ctrl-C; one still starting Python ends silently, where an interrupt would print a traceback)
            process = subprocess.Popen(command, stdin=subprocess.PIPE, process_group=0)
            self._live.add(process)
        try:
            assert process.stdin is not None
            try:
                process.stdin.write(spec.pack())
                process.stdin.close()
            except BrokenPipeError:  # it died before reading its job: its return code says how
                pass
            returncode = process.wait()
        finally:
            with self._lock:
                self._live.discard(process)
        code, failure = describe_exit(returncode)
        return JobOutcome(spec.num, spec.overrides, code, failure)

    def run(self, specs: list[JobSpec], on_outcome: Callable[..., None]) -> list[JobOutcome]:
        """Every job's outcome, in the order of ``specs``; ``on_outcome`` is called with each as it comes, in this
        thread. Ctrl-C stops the jobs (each keeps what it finished); once they have exited, the outcomes of those
        stopped or never started go to ``on_outcome(outcome, stopping=True)`` and the interrupt is raised again."""
        with sigterm_as_ctrl_c():  # the jobs have process groups of their own: a SIGTERM to the sweep stops them too
            return self._run(specs, on_outcome)

    def _run(self, specs: list[JobSpec], on_outcome: Callable[..., None]) -> list[JobOutcome]:
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="vision-eval-job")
        futures = {pool.submit(self._run_one, spec): spec.num for spec in specs}
        outcomes: dict[int, JobOutcome] = {}
        try:
            pending = set(futures)
            while pending:  # with a timeout: a blocked wait would not see Ctrl-C until a job ends
                done, pending = wait(pending, timeout=WAKE_S, return_when=FIRST_COMPLETED)
                for future in done:
                    outcomes[futures[future]] = future.result()
                    on_outcome(outcomes[futures[future]])
        except KeyboardInterrupt:
            self.stop()
            wait(futures, timeout=STOP_WAIT_S)  # the jobs not started yet return at once
            for future, num in futures.items():
                if num not in outcomes and future.done():
                    on_outcome(future.result(), stopping=True)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return [outcomes[spec.num] for spec in specs]

    def stop(self) -> None:
        """Ask every running job to stop as Ctrl-C would (they save their work), and wait for them; start no more."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
        for process in live:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in live:
            try:
                process.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
