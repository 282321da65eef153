"""A one-node SLURM cluster on this machine, for tests: munged, slurmctld and slurmd from Debian's ``slurm-wlm``
(installed by ``.ci/run``; nothing is installed here), started in a temporary folder on free ports and stopped
afterwards, every job cancelled first.

No accounting daemon: slurmdbd needs a MySQL server, and vision-eval's SLURM launcher follows its jobs with
``squeue``, which slurmctld answers alone (``sacct`` is only its fallback). The node is a small one, 2 CPUs and
4 GB, so that the shipped ``hydra/launcher=slurm`` defaults are tried where they must fit.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun")
NODE_CPUS = 2
NODE_MEMORY_MB = 4096
START_TIMEOUT_S = 60
KILL_WAIT_S = 30
"""SLURM's delay between SIGTERM and SIGKILL: long, so that a job that ends sooner is seen to stop on SIGTERM."""


def why_not() -> str | None:
    """Why a cluster cannot be started here (``None`` when it can)."""
    path = f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/bin:/sbin:/bin"
    missing = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=path) is None]
    if missing:
        return f"slurm-wlm and munge are not installed ({', '.join(missing)} missing; .ci/run installs them)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs, and this is not root"
    return None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _config(root: Path, ports: list[int]) -> str:
    host = socket.gethostname()
    return f"""ClusterName=vetest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
KillWait={KILL_WAIT_S}
NodeName={host} NodeAddr=127.0.0.1 CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def slurm_cluster() -> Iterator[dict[str, str]]:
    """Start the cluster; yields the environment its clients need (``SLURM_CONF``). Raises ``RuntimeError``
    saying why when it does not come up."""
    root = Path(tempfile.mkdtemp(prefix="ve-slurm-"))  # short: the munge socket's path must fit in 108 bytes
    (root / "state").mkdir()
    (root / "spool").mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    conf.write_text(_config(root, _free_ports(2)))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        munge = ["munged", "-F", "--force", f"--key-file={key}", f"--socket={root}/munge.socket",
                 f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
                 f"--seed-file={root}/munge.seed"]  # fmt: skip
        for command in (munge, ["slurmctld", "-D", "-c", "-i"], ["slurmd", "-D"]):
            daemons.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.3)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout.strip()
            if state == "idle":
                break
            if any(d.poll() is not None for d in daemons):
                break
            time.sleep(0.5)
        else:
            state = "not idle"
        if state != "idle":
            logs = "; ".join(f"{n}: {_tail(root / f'{n}.log')}" for n in DAEMONS)
            raise RuntimeError(f"the SLURM node did not come up (state {state!r}); {logs}")
        yield env
    finally:
        subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True)
        deadline = time.monotonic() + KILL_WAIT_S + 15
        while time.monotonic() < deadline:
            queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True)
            if queue.returncode != 0 or not queue.stdout.strip():
                break
            time.sleep(1)
        for daemon in reversed(daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(root, ignore_errors=True)
