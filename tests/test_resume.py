"""Checkpoints and resume: a killed run resumes without redoing finished batches, with the same results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

import vision_eval as ve

VOLATILE = ["latency_s", "cached"]


def slow_scores(frame: pl.DataFrame, config: dict) -> pl.DataFrame:
    """Scores by id parity; logs every batch it evaluates and sleeps so a test can kill the run mid-way."""
    with open(config["log"], "a") as handle:
        handle.write(",".join(frame["id"].to_list()) + "\n")
    time.sleep(config.get("sleep", 0))
    return frame.select(pl.col("id"), (pl.col("id").str.slice(1).cast(pl.Int64) % 2).cast(pl.Float64).alias("score"))


def rows(n: int) -> list[dict]:
    return [{"id": f"s{i}", "output": "x"} for i in range(n)]


def stack(log: Path, sleep: float = 0) -> dict:
    return {"slow": {"type": "python", "function": f"{__name__}:slow_scores", "log": str(log), "sleep": sleep}}


def test_rerun_into_the_same_dir_reuses_every_batch(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    first = ve.evaluate(rows(10), evaluators=stack(log), run={"batch_size": 3}, output_dir=tmp_path / "run")
    assert len(log.read_text().splitlines()) == 4
    again = ve.evaluate(rows(10), evaluators=stack(log), run={"batch_size": 3, "resume": str(tmp_path / "run")})
    assert len(log.read_text().splitlines()) == 4  # nothing evaluated twice
    assert again.run_info["resumed_batches"] == {"slow": 4}
    assert again.results.drop(VOLATILE).equals(first.results.drop(VOLATILE))


def test_changed_settings_do_not_reuse_stale_batches(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    ve.evaluate(rows(4), evaluators=stack(log), run={"batch_size": 2}, output_dir=tmp_path / "run")
    changed = stack(log)
    changed["slow"]["threshold"] = 0.2
    result = ve.evaluate(rows(4), evaluators=changed, run={"batch_size": 2, "resume": str(tmp_path / "run")})
    assert result.run_info["resumed_batches"] == {"slow": 0}
    assert len(log.read_text().splitlines()) == 4


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    log = tmp_path / "calls.log"
    run_dir = tmp_path / "run"
    script = (
        "import sys; sys.path.insert(0, 'tests'); import vision_eval as ve, test_resume as t\n"
        "ve.evaluate(t.rows(12), evaluators=t.stack(sys.argv[1], 0.3), run={'batch_size': 2, 'resume': sys.argv[2]})\n"
    )
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", script, str(log), str(run_dir)], cwd=repo, env=subprocess_env)
    deadline = time.time() + 60
    while time.time() < deadline:
        done = list((run_dir / "checkpoint" / "slow").glob("[!.]*")) if (run_dir / "checkpoint").exists() else []
        if len(done) >= 2:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "results.parquet").exists()
    finished = len(list((run_dir / "checkpoint" / "slow").glob("[!.]*")))
    assert 2 <= finished < 6

    resumed = ve.evaluate(rows(12), evaluators=stack(log, 0.3), run={"batch_size": 2, "resume": str(run_dir)})
    evaluated = log.read_text().splitlines()
    assert len(evaluated) - len(set(evaluated)) <= 1  # at most the batch in flight at the kill is redone
    assert resumed.run_info["resumed_batches"] == {"slow": finished}

    clean = ve.evaluate(rows(12), evaluators=stack(tmp_path / "clean.log"), run={"batch_size": 2})
    on_disk = pl.read_parquet(run_dir / "results.parquet")
    assert on_disk.drop(VOLATILE).equals(clean.results.drop(VOLATILE))
    assert json.loads((run_dir / "run.json").read_text())["counts"]["samples"] == 12


JUDGE_SCRIPT = """
import sys, json
import vision_eval as ve
rows = json.loads(open(sys.argv[1]).read())
judge = {"model": "openai/gpt-4o-mini", "api_base": sys.argv[2], "api_key": "k", "cache_dir": sys.argv[3],
         "max_concurrency": 2}
ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}}, judge=judge,
            run={"batch_size": 2, "resume": sys.argv[4]})
"""


def test_judge_run_killed_and_resumed_repeats_no_finished_call(
    tmp_path: Path, subprocess_env: dict[str, str], image_dir: Path
) -> None:
    from vision_eval.llm.cache import CallCache
    from vision_eval.testing.fake_providers import FakeProviders

    data = [
        {
            "id": f"s{i}",
            "output": f"{'red' if i % 2 else 'blue'} shapes, row {i}",
            "images": [str(image_dir / "red.png")],
        }
        for i in range(12)
    ]
    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(data))
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    with FakeProviders(latency=0.4) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-c", JUDGE_SCRIPT, str(rows_file), fake.openai_base, str(cache), str(run_dir)],
            env=subprocess_env,
        )
        deadline = time.time() + 60
        while time.time() < deadline and len(list((run_dir / "checkpoint" / "desc").glob("[!.]*"))) < 2:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        calls_before = fake.calls
        cached = len(CallCache(cache))
        assert 4 <= cached < 12 and not (run_dir / "results.parquet").exists()

        judge = {
            "model": "openai/gpt-4o-mini",
            "api_base": fake.openai_base,
            "api_key": "k",
            "cache_dir": str(cache),
            "max_concurrency": 2,
        }
        resumed = ve.evaluate(
            data,
            evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
            judge=judge,
            run={"batch_size": 2, "resume": str(run_dir)},
        )
        assert fake.calls - calls_before == 12 - cached  # every finished call came from the checkpoint or cache

        clean = ve.evaluate(
            data,
            evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
            judge={**judge, "cache": False},
            run={"batch_size": 2},
        )

    def stable(frame: pl.DataFrame) -> pl.DataFrame:
        """Results without what describes how a value was obtained this time (timing, cache, attempts)."""
        frame = frame.sort("sample_id")
        details = [json.dumps({k: v for k, v in json.loads(d).items() if k != "attempts"}) for d in frame["details"]]
        return frame.drop(VOLATILE, "cost_usd").with_columns(pl.Series("details", details))

    assert stable(resumed.results).equals(stable(clean.results))
    assert pl.read_parquet(run_dir / "results.parquet").height == 12


def test_ctrl_c_stops_cleanly_and_the_cli_resumes(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    log = tmp_path / "calls.log"
    (conf / "slow.yaml").write_text(
        f"slow:\n  type: python\n  function: 'test_resume:slow_scores'\n  log: '{log}'\n  sleep: 0.3\n"
    )
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(12)))
    env = dict(subprocess_env)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent), env["PYTHONPATH"]])
    base = [
        sys.executable,
        "-m",
        "vision_eval.cli",
        "--config-dir",
        str(tmp_path / "conf"),
        "evaluators=slow",
        f"dataset.path={data}",
        "run.batch_size=2",
        "run.write_report=false",
    ]
    proc = subprocess.Popen([*base, "hydra.run.dir=r"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    parts = tmp_path / "r" / "checkpoint" / "slow"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(parts.glob("[!.]*")) if parts.exists() else []) < 1:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "resume with run.resume=" in stderr and "Traceback" not in stderr
    kept = len(list(parts.glob("[!.]*")))
    assert 1 <= kept < 6 and not (tmp_path / "r" / "results.parquet").exists()

    done = subprocess.run(
        [*base, f"run.resume={tmp_path / 'r'}", "hydra.run.dir=r2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(tmp_path / "r" / "results.parquet").height == 12
    assert json.loads((tmp_path / "r" / "run.json").read_text())["resumed_batches"] == {"slow": kept}
