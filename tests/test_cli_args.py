"""The command line as people type it: flags anywhere among the overrides, secrets masked in every message (argument
errors included), a provider's 5xx blamed on the provider, and console commands that a closed pipe (`| head`) does not
break."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import vision_eval as ve
from vision_eval.errors import PreflightError
from vision_eval.testing.fake_providers import Action, FakeProviders

CLI = [sys.executable, "-m", "vision_eval.cli"]
KEY = "sk-live-0123456789abcdefXYZ"


# --- flags anywhere, and no secret on the console --------------------------------------------------------------


def run_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _files_hold(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize(
    ("typed", "order"),
    [
        (["run.limit=2", "-m", "judge=a,b"], ["--multirun", "run.limit=2", "judge=a,b"]),
        (["a=1", "--config-dir", "conf", "b=2"], ["--config-dir", "conf", "a=1", "b=2"]),
        (["a=1", "-cd", "conf", "--cfg", "job", "b=2"], ["--cfg", "job", "--config-dir", "conf", "a=1", "b=2"]),
        (["a=1", "--config-dir=conf", "--multi"], ["--multirun", "--config-dir", "conf", "a=1"]),
        (["a=1", "--info", "b=2"], ["--info", "all", "a=1", "b=2"]),  # --info's value is optional
        (["a=1", "--info", "searchpath"], ["--info", "searchpath", "a=1"]),
        (["--help", "a=1"], ["--help", "a=1"]),
    ],
)
def test_hydra_flags_may_come_anywhere_among_the_overrides(typed: list[str], order: list[str]) -> None:
    from vision_eval.command_line import hydra_order

    assert hydra_order(typed) == order


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        (["a=1", "--cfg"], "argument --cfg/-c: expected one argument"),
        (["a=1", "--limit=3", "b=2"], "unknown flag --limit — `vision-eval --help` lists the flags"),
        (["--cfg", "jobs"], "argument --cfg/-c: invalid choice: 'jobs'"),
    ],
)
def test_a_command_line_hydra_refuses_quotes_only_what_was_typed(typed: list[str], said: str) -> None:
    from vision_eval.command_line import CommandLineError, hydra_order

    with pytest.raises(CommandLineError) as caught:
        hydra_order(typed)
    assert str(caught.value).startswith(said) and "++" not in str(caught.value)


def test_a_sweep_flag_and_a_secret_after_an_override_run_and_stay_hidden(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    args = ["evaluators=basic", f"judge.api_key={KEY}", "-m", "evaluators.exact.threshold=0.5,1", "hydra.sweep.dir=sw"]
    proc = run_cli(args, tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == ["0", "1"]
    assert KEY not in proc.stdout + proc.stderr and _files_hold(tmp_path, KEY) == []


def test_a_config_dir_after_an_override_is_used(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "conf" / "evaluators").mkdir(parents=True)
    (tmp_path / "conf" / "evaluators" / "mine.yaml").write_text("mine:\n  type: exact_match\n")
    proc = run_cli(["run.limit=3", "--config-dir", "conf", "evaluators=mine", "hydra.run.dir=r"], tmp_path,
                   subprocess_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "results.parquet").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["run.limit=2", "--api-key", KEY],  # an unknown flag, the key after it
        ["run.limit=2", f"--api_key={KEY}"],
        ["run.limit=2", "--cfg", f"judge.api_key={KEY}"],  # an argument error quoting the value
        ["run.limit=2", f"judge={KEY}"],  # a config group choice
        ["run.limit=2", f"judge.api_key={KEY}", "judge.api_kye=1"],  # a config error after Hydra
    ],
    ids=["unknown-flag", "unknown-flag-value", "bad-choice", "group-choice", "misspelt-key"],
)
def test_a_refused_command_line_is_one_line_without_the_secret(
    args: list[str], tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    proc = run_cli(args, tmp_path, subprocess_env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("vision-eval: ") and "Traceback" not in proc.stderr and "usage:" not in proc.stderr
    assert KEY not in proc.stdout + proc.stderr and "++" not in proc.stderr
    assert _files_hold(tmp_path, KEY) == []


def test_the_composed_config_shows_no_secret_even_resolved_from_the_environment(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    env = {**subprocess_env, "MY_PROVIDER_API_KEY": KEY}
    proc = run_cli(["run.limit=2", "--cfg", "job", "--resolve", "judge.api_key=${oc.env:MY_PROVIDER_API_KEY}"],
                   tmp_path, env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "api_key: '***'" in proc.stdout or "api_key: ***" in proc.stdout
    assert KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_preflight_5xx_is_the_providers_trouble_not_the_settings(status: int, fresh_fake: FakeProviders) -> None:
    fresh_fake.push(Action(status=status))
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "max_retries": 0,
             "cache": False}  # fmt: skip
    rows = [{"id": "a", "input": "Is it red?", "output": "red"}]
    with pytest.raises(PreflightError) as caught:
        ve.evaluate(rows, evaluators={"r": {"type": "llm_rubric", "rubric": "says red", "images": []}}, judge=judge,
                    run={"progress": False, "preflight": True})  # fmt: skip
    message = str(caught.value)
    assert f"HTTP {status}" in message and "the provider's trouble" in message
    assert "retry later" in message and "run.preflight=false" in message
    assert "max_tokens" not in message  # not the model's settings
    assert fresh_fake.calls == 1


def test_a_preflight_400_still_points_at_the_settings(fresh_fake: FakeProviders) -> None:
    fresh_fake.push(Action(status=400))
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "cache": False}
    with pytest.raises(PreflightError, match=r"check the model's settings"):
        ve.evaluate([{"id": "a", "output": "red"}], evaluators={"r": {"type": "llm_rubric", "rubric": "red",
                    "images": []}}, judge=judge, run={"progress": False, "preflight": True})  # fmt: skip


# --- the console when its reader leaves (`| head`), and where the report's files go ---------------------------------


def _a_run(folder: Path) -> Path:
    rows = [{"id": f"s{i}", "output": f"a{i % 2}", "expected_output": "a0"} for i in range(6)]
    ve.evaluate(rows, evaluators={"exact": {"type": "exact_match"}}, output_dir=folder, run={"progress": False})
    return folder


def _with_the_reader_gone(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with stdout and stderr a pipe whose reader has already left: every write fails (EPIPE), as
    it does for the lines after the tenth of `| head`, deterministically."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(command, cwd=cwd, env=env, stdout=write, stderr=write, timeout=300)
    finally:
        os.close(write)


def _stderr_of(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What ``command`` printed on stderr when its stdout's reader had left (stderr kept, for the traceback)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    return f"exit {proc.returncode}\n{proc.stderr}"


@pytest.mark.parametrize(
    "args",
    [["list"], ["describe", "exact_match"], ["--help"], ["init", "conf"], ["evaluators=basic", "hydra.run.dir=run"]],
    ids=["list", "describe", "help", "init", "run"],
)
def test_a_console_command_piped_into_head_ends_without_a_traceback(
    args: list[str], tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    shown = _stderr_of([*CLI, *args], first, subprocess_env)
    assert shown.startswith("exit 0\n") and "Traceback" not in shown and "BrokenPipe" not in shown, shown
    assert _with_the_reader_gone([*CLI, *args], second, subprocess_env).returncode == 0
    for folder in (first, second):  # the command still did its work
        if args[0] == "init":
            assert (folder / "conf" / "project" / "default.yaml").is_file()
        if args[0] == "evaluators=basic":
            assert (folder / "run" / "results.parquet").is_file() and (folder / "run" / "report.html").is_file()


def test_the_report_piped_into_head_still_writes_the_report(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    run = _a_run(tmp_path / "run")
    command = [sys.executable, "-m", "vision_eval.report.cli", str(run)]
    shown = _stderr_of(command, tmp_path, subprocess_env)
    assert shown.startswith("exit 0\n") and "Traceback" not in shown and "BrokenPipe" not in shown, shown
    assert (run / "report.html").is_file() and (run / "leaderboard.parquet").is_file()


def test_the_leaderboard_goes_beside_the_report_named_by_o(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from vision_eval.report.cli import main as report_main

    run = _a_run(tmp_path / "runs" / "run")
    out = tmp_path / "published" / "report.html"
    assert report_main([str(tmp_path / "runs"), "-o", str(out)]) == 0
    assert out.is_file() and (out.parent / "leaderboard.parquet").is_file()
    assert not (tmp_path / "runs" / "leaderboard.parquet").exists() and not (run / "leaderboard.parquet").exists()
    assert f"wrote {out.parent / 'leaderboard.parquet'}" in capsys.readouterr().out
