"""Faults of the process, each as an operator meets it, and what the run must say: one line and the right exit code,
never a traceback; no finished row lost; nothing paid twice without saying so.

* A full disk: the CLI on a real small tmpfs at several fill levels (CI runs as root; skipped, saying why, where a
  filesystem cannot be mounted), and a file-size limit (``RLIMIT_FSIZE``, runs anywhere): exit 3, one line, no
  ``.tmp`` left, no truncated file, and the resume after space is freed completes.
* A damaged checkpoint (:mod:`test_checkpoint_damage`).
* The exit codes of the README's table, each from the command line; Ctrl-C as a terminal sends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

CLI = [sys.executable, "-m", "vision_eval.cli"]
OUTPUTS = ("results.parquet", "dimensions.parquet", "fields.parquet", "samples.parquet", "run.json", "report.html")


def run_cli(args: list[str], cwd: Path, env: dict[str, str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **options)


def one_line(stderr: str, text: str) -> str:
    """The one stderr line holding ``text`` (asserting there is exactly one, and no traceback anywhere)."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if text in line]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def leftovers(folder: Path) -> list[Path]:
    """Temporary files or folders a write left behind."""
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-")]


def assert_whole(folder: Path) -> None:
    """Every output file present reads whole (none truncated)."""
    for name in OUTPUTS:
        path = folder / name
        if not path.exists():
            continue
        if name.endswith(".parquet"):
            pl.read_parquet(path)
        elif name == "run.json":
            json.loads(path.read_text())
        else:
            assert path.read_text().rstrip().endswith("</html>"), path


# --- a full disk ------------------------------------------------------------------------------------------------


class SmallDisk:
    """A tmpfs of a chosen size, resized at will (root only)."""

    def __init__(self, mount_point: Path) -> None:
        self.path = mount_point
        self.mounted = False

    def mount(self, size: int) -> Path:
        self.unmount()
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.path)], check=True)
        self.mounted = True
        return self.path

    def resize(self, size: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)
            self.mounted = False


def _can_mount(probe: Path) -> str | None:
    """Why a tmpfs cannot be mounted here (``None`` when it can)."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root (CI runs as root)"
    if shutil.which("mount") is None:
        return "no mount command"
    probe.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True)
    if done.returncode != 0:
        return f"this container cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}"
    subprocess.run(["umount", str(probe)], check=False)
    return None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    why = _can_mount(tmp_path / "probe")
    if why is not None:
        pytest.skip(why)
    disk = SmallDisk(tmp_path / "disk")
    yield disk
    disk.unmount()


def demo_size(tmp_path: Path, env: dict[str, str]) -> int:
    """Bytes the demo's finished run directory takes (what a disk must at least hold)."""
    done = run_cli(["hydra.run.dir=full"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    return sum(p.stat().st_size for p in (tmp_path / "full").rglob("*") if p.is_file())


def test_a_full_disk_at_every_fill_level_is_exit_3_in_one_line_and_the_resume_completes(
    small_disk: SmallDisk, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """The demo on a real tmpfs too small for it, from almost empty to almost enough: whichever file meets the
    full disk (the call journal, a checkpoint part, samples, an output file, the report), the run exits 3 with
    one line naming it and saying how to resume, leaves no temporary file and no truncated output; after the
    disk grows, the resume writes every output and removes the checkpoint."""
    needed = demo_size(tmp_path, subprocess_env)
    failed_on = set()
    for share in (0.02, 0.1, 0.3, 0.6, 0.9, 0.97):
        disk = small_disk.mount(max(4096, int(needed * share)))
        done = run_cli([f"hydra.run.dir={disk / 'run'}"], tmp_path, subprocess_env)
        assert done.returncode == 3, (share, done.stderr[-3000:])
        line = one_line(done.stderr, "could not be written")
        assert line.startswith("vision-eval: exit 3: the outputs could not be written: "), line
        assert f"resume with run.resume={disk / 'run'}" in line, line
        failed_on.add(line.split(": ")[3].split("/")[-1][:8])
        assert not leftovers(disk), leftovers(disk)
        assert_whole(disk / "run")
        small_disk.resize(needed * 4)
        resumed = run_cli([f"hydra.run.dir={disk / 'again'}", f"run.resume={disk / 'run'}"], tmp_path, subprocess_env)
        assert resumed.returncode == 0, (share, resumed.stderr[-3000:])
        assert all((disk / "run" / name).is_file() for name in OUTPUTS) and not (disk / "run" / "checkpoint").exists()
        assert_whole(disk / "run")
    assert len(failed_on) >= 3, failed_on  # the levels met the disk in different files


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    ("limit", "failed"),
    [(6_000, "checkpoint/calls.sqlite: disk I/O error; no output file was written"),
     (100_000, "report.html: File too large; written: results.parquet, dimensions.parquet, fields.parquet")],
    ids=["journal", "report"],
)  # fmt: skip
def test_a_file_size_limit_is_exit_3_in_one_line_and_the_resume_completes(
    limit: int, failed: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """A file-size limit (runs unprivileged): 6 kB stops the call journal (SQLite's shared-memory file is
    larger), 100 kB the report. Exit 3, one line naming the file and what was written, no temporary file, no
    run.json (written last, it would say the outputs are all there); the resume without the limit completes."""
    run = tmp_path / "run"
    done = run_cli([f"hydra.run.dir={run}"], tmp_path, subprocess_env, preexec_fn=_limited(limit))
    assert done.returncode == 3, done.stderr[-3000:]
    line = one_line(done.stderr, "could not be written")
    assert failed in line and f"resume with run.resume={run}" in line, line
    assert not leftovers(run) and not (run / "run.json").exists()
    assert_whole(run)
    resumed = run_cli(["hydra.run.dir=again", f"run.resume={run}"], tmp_path, subprocess_env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert all((run / name).is_file() for name in OUTPUTS) and not (run / "checkpoint").exists()


# --- the exit codes of the README's table -------------------------------------------------------------------------

KEY = "sk-process-faults-key-424242"


@pytest.fixture
def helpers_env(subprocess_env: dict[str, str]) -> dict[str, str]:
    """The subprocess environment with tests/ importable (for fault_helpers) and a judge key to keep secret."""
    tests = str(Path(__file__).parent)
    return {**subprocess_env, "PYTHONPATH": os.pathsep.join([subprocess_env["PYTHONPATH"], tests]),
            "OPENAI_API_KEY": KEY}  # fmt: skip


def broken_stack(folder: Path) -> Path:
    conf = folder / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "broken.yaml").write_text("broken:\n  _target_: fault_helpers.BrokenFinalize\n")
    return folder / "conf"


EXIT_CASES = [
    ("0_every_gate_holds", [], 0, "verdict: all gates hold"),
    ("1_a_quality_gate_failed", ["evaluators.ocr_exact.min_pass_rate=0.9"], 1, "ocr_exact: pass rate 0.250 < 0.9"),
    ("2_a_hydra_grammar_error", ["evaluators.ocr_exact.where=tsk = 'ocr'"], 2,
     "config error: cannot read the override 'evaluators.ocr_exact.where=tsk = 'ocr''"),
    ("2_an_unknown_setting", ["run.batch_sise=3"], 2, "config error: run.batch_sise"),
    ("2_a_bad_launcher_setting", ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=abc",
                                  "evaluators.ocr_exact.threshold=0.5,1", "hydra.sweep.dir=sweep"], 2,
     "config error: Error merging override hydra.launcher.n_jobs=abc"),
    ("3_nothing_was_scored", ["evaluators=judges"], 3, "nothing was scored: every one of the"),
    ("0_nothing_scored_is_allowed", ["evaluators=judges", "run.allow_nothing_scored=true"], 0,
     "verdict: all gates hold"),
    ("3_errors_past_the_gate", ["evaluators.ocr_exact.columns.output=notes"], 3, "every applicable row is an error"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "says"), [c[1:] for c in EXIT_CASES], ids=[c[0] for c in EXIT_CASES])
def test_each_exit_code_of_the_table(
    args: list[str], code: int, says: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = run_cli([*args, "hydra.run.dir=run", "run.write_report=false"], tmp_path, subprocess_env)
    assert done.returncode == code, done.stderr[-3000:]
    assert says in done.stdout + done.stderr and "Traceback" not in done.stderr, (done.stdout + done.stderr)[-3000:]
    if code == 2:
        assert not (tmp_path / "run" / "results.parquet").exists()


def test_an_internal_error_is_exit_4_in_one_line_with_the_traceback_in_the_run_directory(
    tmp_path: Path, helpers_env: dict[str, str]
) -> None:
    """A bug (here a plugin's ``finalize`` raising): exit 4, one line saying it is a bug, where to report it and
    where the traceback is; the traceback is in the run directory's log, the key masked everywhere."""
    conf = broken_stack(tmp_path)
    done = run_cli([f"--config-dir={conf}", "evaluators=broken", "hydra.run.dir=run"], tmp_path, helpers_env)
    assert done.returncode == 4, done.stderr[-3000:]
    line = one_line(done.stderr, "internal error")
    log = tmp_path / "run" / "vision-eval-error.log"
    assert f"the traceback is in {log}" in line and "this is a bug" in line and "report it to" in line, line
    assert "RuntimeError: finalize broke with key ***" in line, line
    text = log.read_text()
    assert "Traceback" in text and "in finalize" in text and "finalize broke with key ***" in text
    assert KEY not in done.stdout + done.stderr + text


def test_a_launcher_failure_is_exit_4_with_the_traceback_in_a_temporary_file(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Code outside the jobs fails (the joblib launcher refuses ``n_jobs=0`` when it starts the sweep): exit 4,
    one line, the traceback in a temporary file since no run directory exists yet."""
    done = run_cli(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0", "evaluators.ocr_exact.threshold=0.5,1",
                    "hydra.sweep.dir=sweep"], tmp_path, subprocess_env)  # fmt: skip
    assert done.returncode == 4, done.stderr[-3000:]
    line = one_line(done.stderr, "internal error")
    assert "ValueError: n_jobs == 0 in Parallel has no meaning" in line, line
    log = Path(line.split("the traceback is in ")[1].split("; ")[0])
    assert log.is_file() and log.parent == Path(tempfile.gettempdir())
    assert "Traceback" in log.read_text() and "joblib" in log.read_text()
    log.unlink()


def test_an_internal_error_in_a_sweep_job_is_its_exit_4_and_the_other_jobs_run(
    tmp_path: Path, helpers_env: dict[str, str]
) -> None:
    conf = broken_stack(tmp_path)
    (conf / "evaluators" / "fine.yaml").write_text("exact:\n  type: exact_match\n")
    done = run_cli([f"--config-dir={conf}", "-m", "evaluators=broken,fine", "hydra.sweep.dir=sweep",
                    "run.write_report=false"], tmp_path, helpers_env)  # fmt: skip
    assert done.returncode == 4, done.stderr[-3000:]
    one_line(done.stderr, "vision-eval: internal error (")
    assert "vision-eval: sweep exit 4: 1 of 2 jobs finished; not finished: job 0" in done.stderr  # the summary
    codes = sorted(json.loads((tmp_path / "sweep" / job / "run.json").read_text())["exit_code"] for job in "01")
    assert codes == [0, 4]


# --- Ctrl-C as a terminal sends it ------------------------------------------------------------------------------

PROGRESS = re.compile(r"^\S+ \d+/\d+ \(\d+%\)")


def without_progress(stderr: str) -> list[str]:
    """The console's lines other than progress lines."""
    return [line for line in stderr.splitlines() if line.strip() and not PROGRESS.match(line)]


def judged_rows(folder: Path, n: int) -> Path:
    from conftest import RED, shape_png

    (folder / "red.png").write_bytes(shape_png(RED, 2))
    rows = [{"id": f"s{i}", "output": f"red shapes, row {i}", "expected_output": f"red shapes, row {i}",
             "images": [str(folder / "red.png")]} for i in range(n)]  # fmt: skip
    data = folder / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    conf = folder / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "judged.yaml").write_text(
        "desc:\n  type: llm_judge\n  prompt: image-description\nexact:\n  type: exact_match\n"
    )
    return data


def press_ctrl_c(proc: subprocess.Popen[str], times: int = 1) -> tuple[str, str]:
    """SIGINT to the run's whole process group (as a terminal's Ctrl-C), ``times`` times 50 ms apart."""
    for n in range(times):
        if n:
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
    return proc.communicate(timeout=120)


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_mid_run_prints_the_resume_hint_only(
    presses: int, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Ctrl-C (once, or twice in a row as an impatient user does) while judge calls are in flight: exit 130 and
    the one line saying what is kept and how to resume, nothing else; the resume then finishes."""
    from vision_eval.testing.fake_providers import FakeProviders

    data = judged_rows(tmp_path, 40)
    env = {**subprocess_env, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=0.3) as fake:
        base = [*CLI, "--config-dir", str(tmp_path / "conf"), "evaluators=judged", f"dataset.path={data}",
                "judge=openai", f"judge.api_base={fake.openai_base}", "judge.cache=false", "run.preflight=false",
                "run.write_report=false"]  # fmt: skip
        proc = subprocess.Popen([*base, "hydra.run.dir=r"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 60
        while fake.calls < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        _, stderr = press_ctrl_c(proc, presses)
        assert proc.returncode == 130, stderr[-3000:]
        lines = without_progress(stderr)
        assert len(lines) == 1 and lines[0].startswith("interrupted: finished work is kept ("), stderr[-3000:]
        assert lines[0].endswith(f"; resume with run.resume={tmp_path / 'r'}"), lines[0]
        done = subprocess.run([*base, f"run.resume={tmp_path / 'r'}", "hydra.run.dir=r2"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    assert pl.read_parquet(tmp_path / "r" / "results.parquet").height == 80


def test_ctrl_c_before_anything_was_evaluated_says_so(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """Ctrl-C during the preflight request (nothing evaluated yet): exit 130 and one line saying so."""
    from vision_eval.testing.fake_providers import FakeProviders

    data = judged_rows(tmp_path, 4)
    env = {**subprocess_env, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=5.0) as fake:
        proc = subprocess.Popen([*CLI, "--config-dir", str(tmp_path / "conf"), "evaluators=judged",
                                 f"dataset.path={data}", "judge=openai", f"judge.api_base={fake.openai_base}",
                                 "hydra.run.dir=r"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 60
        while fake.calls < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        _, stderr = press_ctrl_c(proc)
    assert proc.returncode == 130, stderr[-3000:]
    assert without_progress(stderr) == ["interrupted: nothing was evaluated"], stderr[-3000:]


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300,000 rows: reading them (ids first, then batches) takes the run a second or more."""
    folder = tmp_path_factory.mktemp("big")
    rows = pl.DataFrame({"id": [f"r{i}" for i in range(300_000)]}).with_columns(
        pl.format("{} circles", pl.int_range(pl.len()) % 97).alias("output"),
        pl.format("{} circles", pl.int_range(pl.len()) % 89).alias("expected_output"),
    )
    rows.write_ndjson(folder / "rows.jsonl")
    return folder / "rows.jsonl"


def _reading(pid: int, path: Path) -> bool:
    """True while process ``pid`` holds ``path`` open (Linux: /proc/<pid>/fd)."""
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see when the dataset is being read")
def test_ctrl_c_twice_while_the_dataset_is_read_is_one_line(
    big_rows: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Ctrl-C twice while the dataset is being read (Polars can raise the interrupt once and Python once more):
    exit 130, one line, no traceback."""
    proc = subprocess.Popen([*CLI, f"dataset.path={big_rows}", "evaluators=basic", "hydra.run.dir=r"],
                            cwd=tmp_path, env=subprocess_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not _reading(proc.pid, big_rows) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    _, stderr = press_ctrl_c(proc, 2)
    assert proc.returncode == 130, stderr[-3000:]
    assert len(without_progress(stderr)) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert without_progress(stderr)[0].startswith("interrupted: "), stderr[-3000:]


def test_a_journal_the_disk_refuses_stops_the_calls_and_says_what_a_resume_pays_again(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """The call journal outgrows a file-size limit mid-run (its parts still fit): no call is sent after that, the
    run exits 3 with one line naming calls.sqlite and how many finished calls it could not record (at most the
    calls in flight), and the resume completes every row paying at most those again."""
    from vision_eval.testing.fake_providers import FakeProviders

    data = judged_rows(tmp_path, 200)
    (tmp_path / "conf" / "evaluators" / "judged.yaml").write_text(
        "desc:\n  type: llm_judge\n  prompt: image-description\n"
    )
    env = {**subprocess_env, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=0.02) as fake:
        base = [f"--config-dir={tmp_path / 'conf'}", "evaluators=judged", f"dataset.path={data}", "judge=openai",
                f"judge.api_base={fake.openai_base}", "judge.cache=false", "run.preflight=false",
                "run.write_report=false", "run.concurrency=8"]  # fmt: skip
        done = run_cli([*base, "hydra.run.dir=r"], tmp_path, env, preexec_fn=_limited(60_000))
        first = fake.wait_idle()
        assert done.returncode == 3, done.stderr[-3000:]
        line = one_line(done.stderr, "could not be written")
        assert "checkpoint/calls.sqlite: disk I/O error" in line and "resume with run.resume=" in line, line
        unrecorded = int(line.split("; ")[-1].split(" finished calls could not be recorded")[0])
        assert 0 < unrecorded <= 8 and first < 200 // 4, (first, line)  # stopped within the calls in flight
        resumed = run_cli([*base, "hydra.run.dir=r2", f"run.resume={tmp_path / 'r'}"], tmp_path, env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert fake.wait_idle() <= 200 + unrecorded
    assert pl.read_parquet(tmp_path / "r" / "results.parquet")["status"].to_list() == ["processed"] * 200
