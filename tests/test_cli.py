"""The `vision-eval` command as a user runs it: from any directory, composing, sweeping, failing clearly."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO
from secret_scan import assert_no_secret

CLI = [sys.executable, "-m", "vision_eval.cli"]


def run_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_demo_run_from_another_directory(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(["hydra.run.dir=run"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "run"
    for name in (
        "results.parquet",
        "dimensions.parquet",
        "fields.parquet",
        "samples.parquet",
        "run.json",
        "config.yaml",
    ):
        assert (out / name).is_file(), name
    samples = pl.read_parquet(out / "samples.parquet")
    results = pl.read_parquet(out / "results.parquet")
    evaluators = results["evaluator"].n_unique()
    assert results.height == samples.height * evaluators  # one row per sample x evaluator
    assert "vision-eval summary" in proc.stdout
    info = json.loads((out / "run.json").read_text())
    assert info["counts"]["samples"] == samples.height >= 25


def test_cfg_job_shows_the_composed_config(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(["--cfg", "job", "evaluators=basic"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert "exact:" in proc.stdout and "type: exact_match" in proc.stdout and "run:" in proc.stdout


def test_command_line_override_and_compose(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(
        ["evaluators=basic", "evaluators.exact.case_sensitive=true", "run.limit=12", "hydra.run.dir=r"],
        tmp_path,
        subprocess_env,
    )
    assert proc.returncode == 0, proc.stderr
    results = pl.read_parquet(tmp_path / "r" / "results.parquet")
    assert results["evaluator"].unique().to_list() == ["exact"] and results.height == 12


def test_multirun_sweep_writes_one_dir_per_job(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(
        ["-m", "evaluators=basic", "evaluators.exact.threshold=0.5,1.0", "hydra.sweep.dir=sweep"],
        tmp_path,
        subprocess_env,
    )
    assert proc.returncode == 0, proc.stderr
    thresholds = sorted(pl.read_parquet(p)["threshold"][0] for p in (tmp_path / "sweep").glob("*/results.parquet"))
    assert thresholds == [0.5, 1.0]


def test_bad_override_fails_before_anything_runs(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(["evaluators.ocr_exact.threshold=high", "hydra.run.dir=r"], tmp_path, subprocess_env)
    assert proc.returncode == 2
    assert "evaluators.ocr_exact.threshold" in proc.stderr and "command-line override" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / "results.parquet").exists()


def test_bad_key_in_a_user_config_file_names_the_file(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    conf = tmp_path / "myconf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("check:\n  type: exact_match\n  colour: red\n")
    proc = run_cli(
        ["--config-dir", str(tmp_path / "myconf"), "evaluators=mine", "hydra.run.dir=r"], tmp_path, subprocess_env
    )
    assert proc.returncode == 2
    assert "evaluators.check.colour: unknown key" in proc.stderr
    assert str(conf / "mine.yaml") in proc.stderr


def test_secret_from_the_command_line_is_not_saved(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    secret = "sk-cli-secret-42"
    proc = run_cli([f"+judge.api_key={secret}", "run.limit=5", "hydra.run.dir=r"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert_no_secret(tmp_path / "r", secret, expect=("results.parquet", "run.json", "config.yaml"))


def test_secret_is_not_saved_by_a_sweep(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    secret = "sk-sweep-secret-7"
    proc = run_cli(
        [
            "-m",
            "hydra/launcher=joblib",
            f"+judge.api_key={secret}",
            "run.limit=5",
            "evaluators.ocr_exact.threshold=0.5,1.0",
            "hydra.sweep.dir=s",
        ],
        tmp_path,
        subprocess_env,
    )
    assert proc.returncode == 0, proc.stderr
    files = [f for f in (tmp_path / "s").rglob("*") if f.is_file()]
    assert any(f.name == "multirun.yaml" for f in files) and len(list((tmp_path / "s").glob("*/results.parquet"))) == 2
    assert_no_secret(tmp_path / "s", secret, expect=("results.parquet", "run.json", "config.yaml"))


@pytest.mark.slow
def test_wheel_ships_configs_and_demo(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if build.returncode != 0 and "hatchling" in build.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert build.returncode == 0, build.stderr
    wheel = next(tmp_path.glob("vision_eval-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "vision_eval/_shipped/conf/config.yaml" in names
    assert "vision_eval/_shipped/datasets/demo/demo.jsonl" in names
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    env = dict(subprocess_env, PYTHONPATH=str(target))
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "from vision_eval._resources import conf_dir, resource; "
            "print(conf_dir()); print(resource('datasets/demo/demo.jsonl').is_file())",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    lines = check.stdout.split()
    assert lines[0].startswith(str(target)) and lines[1] == "True"
    demo = subprocess.run(
        [sys.executable, "-m", "vision_eval.cli", "run.limit=5", "hydra.run.dir=w"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    assert (tmp_path / "w" / "results.parquet").is_file()


def test_overrides_of_unlisted_keys_need_no_plus() -> None:
    from vision_eval.cli import forgiving_overrides

    argv = [
        "-m",
        "judge=openai",
        "evaluators.x.threshold=0.5",
        "+a.b=1",
        "hydra.run.dir=x",
        "hydra/launcher=joblib",
        "--cfg",
        "job",
        "run.limit=3",
    ]
    assert forgiving_overrides(argv) == [
        "-m",
        "judge=openai",
        "++evaluators.x.threshold=0.5",
        "+a.b=1",
        "hydra.run.dir=x",
        "hydra/launcher=joblib",
        "--cfg",
        "job",
        "++run.limit=3",
    ]


def test_misspelt_key_override_is_a_clear_config_error(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = run_cli(["judge.modle=openai/gpt-4o", "hydra.run.dir=r"], tmp_path, subprocess_env)
    assert proc.returncode == 2
    assert "judge.modle: unknown key" in proc.stderr and "command-line override" in proc.stderr
