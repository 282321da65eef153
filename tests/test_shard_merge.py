"""A merge of shards checks it has everything (issue #27 item 1): ``vision-eval-report`` and ``vision-eval compare``
name a missing, dead, running or twice-done shard, a shard short of its rows and an id in two shards, with the
command that finishes it, and exit 3 unless ``--allow-partial`` (which marks the page and the leaderboard)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from vision_eval.commands.compare import main as compare_main
from vision_eval.launch import holder
from vision_eval.report.cli import main as report_main

ROWS = 30
REPO = Path(__file__).resolve().parents[1]


def _sweep(tmp: Path, env: dict[str, str], rows: list[dict[str, str]], code: int = 0) -> Path:
    data = tmp / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run(
        [sys.executable, "-m", "vision_eval.cli", "run.shards=3", "evaluators=basic", f"dataset.path={data}",
         "evaluators.exact.where=null", "run.write_report=false", "hydra.sweep.dir=sweep"],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    return tmp / "sweep"


def _rows(repeat: bool = False) -> list[dict[str, str]]:
    rows = [{"id": f"r{i}", "output": "a", "expected_output": "a" if i % 5 else "b"} for i in range(ROWS)]
    if repeat:  # rows 3 and 15 go to shards 0 and 1: each shard alone has unique ids
        rows[15]["id"] = "r3"
    return rows


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return _sweep(tmp_path_factory.mktemp("sweep"), env, _rows())


@pytest.fixture
def sweep(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(made, copy)
    return copy


def _report(sweep: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = report_main([str(sweep), "--no-html", *extra])
    out = capsys.readouterr()
    return code, out.out + out.err


def _unfinish(shard_dir: Path, shard: str, lock_pid: int | None) -> None:
    """Make ``shard_dir`` look like a run of ``shard`` that has checkpointed and not finished."""
    info = json.loads((shard_dir / "run.json").read_text())
    for name in ("results.parquet", "run.json", "samples.parquet", "dimensions.parquet", "fields.parquet"):
        (shard_dir / name).unlink(missing_ok=True)
    (shard_dir / "checkpoint").mkdir()
    manifest = {"run_id": info["run_id"], "config": {"dataset": info["config"]["dataset"]}, "shard": shard}
    (shard_dir / "checkpoint" / "manifest.json").write_text(json.dumps(manifest))
    if lock_pid is not None:
        (shard_dir / ".vision_eval.lock").write_text(json.dumps({**holder.me(), "pid": lock_pid}))


def test_a_complete_sweep_merges(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _report(sweep, capsys)
    assert code == 0, out
    board = pl.read_parquet(sweep / "leaderboard.parquet")
    assert board["rows"][0] == ROWS and "partial" not in board.columns


def test_a_missing_shard_exits_3_and_says_how_to_run_it(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(sweep / "1")
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 1/3 is missing" in out and "run.shard=1/3" in out and "vision-eval" in out
    assert not (sweep / "leaderboard.parquet").exists()  # nothing published over the wrong rows


def test_a_dead_shard_is_named_with_its_resume_command(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    _unfinish(sweep / "2", "2/3", gone.pid)
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 2/3 died unfinished" in out and f"run.resume={(sweep / '2').resolve()}" in out


def test_a_shard_killed_before_its_checkpoint_is_named(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    shutil.rmtree(sweep / "1")
    (sweep / "1").mkdir()
    (sweep / "1" / ".vision_eval.lock").write_text(json.dumps({**holder.me(), "pid": gone.pid}))
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 1/3 is missing" in out and "dead before it saved anything" in out


def test_a_running_shard_is_named_as_running(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _unfinish(sweep / "0", "0/3", None)
    (sweep / "0" / ".vision_eval.lock").write_text(json.dumps(holder.me()))  # this process: alive
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 0/3 is still running" in out and "wait for it to end" in out


def test_a_shard_done_twice_names_the_stale_one(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(sweep / "1", sweep / "1-2")  # Ray's retry beside the stale first attempt, both finished
    (sweep / "1-2" / "run.json").touch()
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 1/3 was done 2 times" in out and f"move the stale {(sweep / '1').resolve()}" in out


def test_a_stale_unfinished_attempt_beside_the_finished_shard_is_named(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(sweep / "1", sweep / "1-2")
    gone = subprocess.Popen(["true"])
    gone.wait()
    _unfinish(sweep / "1", "1/3", gone.pid)
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 1/3 has an unfinished attempt" in out and "(stale)" in out


def test_a_shard_short_of_its_rows_is_named(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sweep / "0" / "run.json"
    info = json.loads(path.read_text())
    info["dataset"]["selected"] = ROWS + 3  # the dataset's selection grew: shard 0 should hold 11 rows, not 10
    path.write_text(json.dumps(info))
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "shard 0/3" in out and "holds 10 rows, not its share 11 of the 33 selected" in out


def test_allow_partial_marks_the_leaderboard_and_the_page(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(sweep / "2")
    code = report_main([str(sweep), "--allow-partial"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "shard 2/3 is missing" in out.err
    board = pl.read_parquet(sweep / "leaderboard.parquet")
    assert board["partial"].to_list() == [True] * board.height and board["rows"][0] == 20
    assert "PARTIAL" in (sweep / "report.html").read_text(encoding="utf-8")


def test_an_id_repeated_across_shards_is_refused_by_every_shard_before_it_runs(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """A shard reads every shard's ids (the id column alone) before it runs: it refuses what a single run refuses."""
    sweep = _sweep(tmp_path, subprocess_env, _rows(repeat=True), code=2)
    assert not list(sweep.glob("*/results.parquet"))


def test_an_id_in_two_shards_is_refused_at_the_merge(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Where the shards could not see each other's ids (a streamed source, a dataset changed between two shards),
    the merge refuses an id in two shards."""
    for name in ("samples", "results"):
        path, column = sweep / "1" / f"{name}.parquet", "id" if name == "samples" else "sample_id"
        frame = pl.read_parquet(path)
        first = frame[column][0]
        pl.read_parquet(path).with_columns(pl.col(column).replace(first, "r3")).write_parquet(path)
    code, out = _report(sweep, capsys)
    assert code == 3, out
    assert "ids in more than one shard (r3)" in out


def test_compare_refuses_a_partial_side(sweep: Path, made: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(sweep / "0")
    out = sweep.parent / "cmp"
    assert compare_main([str(made), str(sweep), "--no-html", "-o", str(out)]) == 3
    assert "shard 0/3 is missing" in capsys.readouterr().err
    assert compare_main([str(made), str(sweep), "--no-html", "-o", str(out), "--allow-partial"]) == 0
    assert "PARTIAL" in capsys.readouterr().out
