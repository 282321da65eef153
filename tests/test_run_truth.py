"""A run tells the truth, as an unattended CI job or sweep sees it: the real `vision-eval` as a subprocess,
its exit code, its stderr and its files, against the fake provider servers (counting what reaches them)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import JUDGED, user_project
from secret_scan import assert_no_secret

from vision_eval.testing.fake_providers import Action, FakeProviders

KEY = "sk-test-0123456789abcdef"
PING = "Reply with the word OK."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: data with images under ``data/``, a config dir with a dataset and two stacks."""
    rows = [
        {
            "id": f"s{i}",
            "input": "Describe the image.",
            "output": f"{'red' if i % 3 else 'blue'} circles (row {i})",
            "expected_output": f"red circles (row {i})",
            "images": ["images/red.png" if i % 2 else "images/blue.png"],
        }
        for i in range(12)
    ]
    return user_project(tmp_path, rows, {"judged": JUDGED, "exact": "exact:\n  type: exact_match\n"}, "images")


def vision_eval(project: Path, *args: str, env: dict[str, str], key: bool = True) -> subprocess.CompletedProcess:
    run_env = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    if key:
        run_env["OPENAI_API_KEY"] = KEY
    command = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(project / "conf"), *args, "dataset=mine"]
    return subprocess.run(command, cwd=project, env=run_env, capture_output=True, text=True, timeout=300)


def judged(fake: FakeProviders, project: Path, *extra: str) -> list[str]:
    return ["evaluators=judged", "judge=openai", f"judge.api_base={fake.openai_base}",
            f"judge.cache_dir={project / 'cache'}", *extra]  # fmt: skip


def run_json(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "run.json").read_text())


def row_calls(fake: FakeProviders) -> int:
    """Requests that graded a row (not the preflight ping)."""
    return sum(1 for r in fake.requests if r.text != PING)


# --- exit codes, gates and preflight -----------------------------------------------------------------------


def test_missing_key_sends_nothing_and_exits_2(project, fresh_fake, subprocess_env) -> None:
    proc = vision_eval(project, *judged(fresh_fake, project), "hydra.run.dir=r", env=subprocess_env, key=False)
    assert proc.returncode == 2, proc.stderr
    assert "OPENAI_API_KEY is not set" in proc.stderr and "nothing was evaluated" in proc.stderr
    assert fresh_fake.calls == 0 and not (project / "r" / "results.parquet").exists()


def test_preflight_failure_quotes_the_provider_and_hints(project, fresh_fake, subprocess_env) -> None:
    fresh_fake.push(Action(status=401))
    proc = vision_eval(project, *judged(fresh_fake, project), "hydra.run.dir=r", env=subprocess_env)
    assert proc.returncode == 2, proc.stderr
    assert "preflight failed" in proc.stderr and "HTTP 401" in proc.stderr and "fake error 401" in proc.stderr
    assert "check the key in $OPENAI_API_KEY" in proc.stderr
    assert fresh_fake.calls == 1  # one tiny request, not one per row, and a 401 is not retried


def test_every_judge_call_failing_is_exit_3_with_the_reason(project, subprocess_env) -> None:
    prose = FakeProviders(responder=lambda request: "I would rather not grade this.")
    with prose:
        proc = vision_eval(project, *judged(prose, project), "hydra.run.dir=r", env=subprocess_env)
    assert proc.returncode == 3, proc.stderr
    assert "desc: every applicable row is an error (12 of 12 rows)" in proc.stderr
    assert "unusable grader reply" in proc.stdout  # the most common reason, under the summary
    info = run_json(project / "r")
    assert info["exit_code"] == 3 and info["gates"][0]["gate"] == "max_error_rate" and not info["gates"][0]["passed"]


def test_a_candidate_failing_on_every_row_is_exit_3_not_a_quiet_skip(project, fresh_fake, subprocess_env) -> None:
    fresh_fake.push(*[Action(status=400)] * 12)
    candidate = ["candidate=openai", f"candidate.api_base={fresh_fake.openai_base}", "candidate.cache=false"]
    proc = vision_eval(project, "evaluators=exact", *candidate, "run.preflight=false", "hydra.run.dir=r",
                       env=subprocess_env)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "candidate: 12 of 12 generations failed" in proc.stderr and "HTTP 400" in proc.stderr
    results = pl.read_parquet(project / "r" / "results.parquet")
    assert results["status"].unique().to_list() == ["skipped"]
    assert results["details"].str.contains("candidate generation failed").all()


def test_quality_gates_exit_1_and_are_recorded(project, subprocess_env) -> None:
    proc = vision_eval(project, "evaluators=exact", "evaluators.exact.min_pass_rate=0.9",
                       "evaluators.exact.min_mean_score=0.5", "hydra.run.dir=r", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "exact: pass rate 0.667 < 0.9" in proc.stderr and "gate FAIL" in proc.stdout
    gates = {g["gate"]: g for g in run_json(project / "r")["gates"]}
    assert not gates["min_pass_rate"]["passed"] and gates["min_mean_score"]["passed"]
    assert gates["max_error_rate"]["passed"] and gates["max_error_rate"]["limit"] == 0.1


def test_multirun_runs_every_job_and_exits_with_the_worst(project, subprocess_env) -> None:
    proc = vision_eval(project, "-m", "evaluators=exact", "evaluators.exact.min_pass_rate=0,0.9,7",
                       "hydra.sweep.dir=sweep", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # job 2 is a config error, the worst of 0, 1 and 2
    codes = {p.parent.name: run_json(p.parent)["exit_code"] for p in (project / "sweep").glob("*/run.json")}
    assert codes == {"0": 0, "1": 1, "2": 2}
    assert (project / "sweep" / "1" / "results.parquet").is_file()  # the failing job did not stop the others
    assert "less than or equal to 1" in run_json(project / "sweep" / "2")["problems"][0]


def test_config_mistakes_are_exit_2_naming_what_exists(project, subprocess_env) -> None:
    for args, expected in (
        (["judge=opena"], "judge: no option 'opena'; did you mean 'openai'?"),
        (["datset=demo"], "unknown config group 'datset' in 'datset=demo'; did you mean 'dataset'?"),
        (["run.batch_size=0"], "run.batch_size: Input should be greater than or equal to 1"),
        (["run.limit=-1"], "run.limit: Input should be greater than or equal to 0"),
        (["evaluators=exact", "evaluators.exact.threshold=7"], "evaluators.exact.threshold: 7 is outside the score"),
        (["evaluators=exact", f"run.resume={project / 'nowhere'}"], "does not exist: there is no run to resume"),
    ):
        proc = vision_eval(project, *args, "hydra.run.dir=r", env=subprocess_env)
        assert proc.returncode == 2 and expected in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


# --- circuit breaker and budget ------------------------------------------------------------------------------


def test_circuit_breaker_stops_calling_a_failing_model(project, fresh_fake, subprocess_env) -> None:
    fresh_fake.push(*[Action(status=403)] * 50)
    proc = vision_eval(project, *judged(fresh_fake, project, "judge.circuit_breaker=3", "judge.max_concurrency=1"),
                       "run.preflight=false", "hydra.run.dir=r", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert fresh_fake.calls == 3  # then it stopped calling
    assert "circuit breaker stopped calling openai/gpt-4o-mini" in proc.stderr
    results = pl.read_parquet(project / "r" / "results.parquet")
    stopped = results.filter(pl.col("error").str.contains("not attempted: openai/gpt-4o-mini is failing"))
    assert stopped.height == 9 and results["status"].unique().to_list() == ["error"]
    assert (project / "r" / "checkpoint").is_dir()  # the run can be resumed once the model works again


def test_budget_stops_the_calls_and_a_larger_budget_finishes_without_paying_twice(
    project, fresh_fake, subprocess_env
) -> None:
    proc = vision_eval(project, *judged(fresh_fake, project, "judge.cache=false"), "run.max_cost_usd=0.002",
                       "hydra.run.dir=r", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    first = row_calls(fresh_fake)
    assert 0 < first < 12  # the requests stopped at the budget
    info = run_json(project / "r")
    assert 0 < info["spending"]["spent_usd"] <= 0.002 and info["spending"]["budget_usd"] == 0.002
    results = pl.read_parquet(project / "r" / "results.parquet")
    skipped = results.filter(pl.col("status") == "skipped")
    assert skipped.height == 12 - first and skipped["details"].str.contains("budget exhausted").all()
    assert "budget exhausted" in proc.stderr and "run.max_cost_usd" in proc.stderr

    more = vision_eval(project, *judged(fresh_fake, project, "judge.cache=false"), "run.max_cost_usd=1",
                       f"run.resume={project / 'r'}", "hydra.run.dir=r2", env=subprocess_env)  # fmt: skip
    assert more.returncode == 0, more.stderr
    assert row_calls(fresh_fake) == 12  # every row graded once in all, none paid twice
    final = pl.read_parquet(project / "r" / "results.parquet")
    assert final["status"].unique().to_list() == ["processed"]
    assert run_json(project / "r")["spending"]["spent_usd"] > info["spending"]["spent_usd"]


def test_dry_run_prices_the_plan_and_sends_nothing(project, fresh_fake, subprocess_env) -> None:
    proc = vision_eval(project, *judged(fresh_fake, project), "run.dry_run=true", "hydra.run.dir=r",
                       env=subprocess_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "dry run: nothing was sent" in proc.stdout
    line = next(line for line in proc.stdout.splitlines() if line.startswith("│ desc"))
    assert "openai/gpt-4o-mini" in line and "│    12 │" in line and "$0.00" in line
    assert fresh_fake.calls == 0 and not (project / "r" / "results.parquet").exists()


# --- progress ----------------------------------------------------------------------------------------------


def test_progress_lines_appear_without_a_terminal(project, subprocess_env) -> None:
    with FakeProviders(latency=0.25) as slow:
        proc = vision_eval(project, *judged(slow, project, "judge.max_concurrency=2"), "run.progress_interval_s=0.3",
                           "hydra.run.dir=r", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    live = re.findall(r"^desc (\d+)/12 \(\d+%\) [\d.]+ rows/s ETA \S+ errors 0 tokens \S+ \$[\d.]+$", proc.stderr, re.M)
    assert live and int(live[0]) < 12  # lines while the run was going, not only at the end
    assert re.search(r"^desc 12/12 \(100%\) done in \S+ errors 0", proc.stderr, re.M)


# --- outputs that compose -------------------------------------------------------------------------------------


def test_runs_never_share_a_directory_and_globs_count_each_result_once(project, subprocess_env) -> None:
    for _ in range(2):
        proc = vision_eval(project, "evaluators=exact", "hydra.run.dir=out/r", env=subprocess_env)
        assert proc.returncode == 0, proc.stderr
    assert "already held a run" in proc.stdout
    files = sorted((project / "out").glob("**/results.parquet"))
    assert [f.parent.name for f in files] == ["r", "r-2"]
    both = pl.concat([pl.read_parquet(f) for f in files])
    assert both.height == 24 and both["run_id"].n_unique() == 2
    assert {run_json(f.parent)["run_id"] for f in files} == set(both["run_id"].unique())
    assert not list((project / "out").glob("**/checkpoint"))


def test_two_runs_started_together_never_share_a_directory(project, subprocess_env) -> None:
    command = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(project / "conf"), "evaluators=exact",
               "hydra.run.dir=same", "dataset=mine"]  # fmt: skip
    procs = [subprocess.Popen(command, cwd=project, env=subprocess_env, stdout=subprocess.DEVNULL) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    runs = sorted(p.parent.name for p in project.glob("*/results.parquet"))
    assert runs == ["same", "same-2", "same-3"]
    assert len({run_json(project / r)["run_id"] for r in runs}) == 3


def test_junit_xml_for_ci(project, subprocess_env) -> None:
    proc = vision_eval(project, "evaluators=exact", "run.junit=reports/junit.xml", "evaluators.exact.min_pass_rate=1",
                       "hydra.run.dir=r", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 1
    root = ET.parse(project / "r" / "reports" / "junit.xml").getroot()
    suite = root.find("testsuite[@name='exact']")
    assert suite is not None and suite.get("tests") == "12" and suite.get("failures") == "4"
    failed = suite.find("testcase[@name='s0']/failure")
    assert failed is not None and failed.get("message") == "score 0 < threshold 1"
    assert root.find("testsuite[@name='gates']/testcase[@name='exact.min_pass_rate']/failure") is not None


def test_no_secret_reaches_the_console_or_the_files(project, fresh_fake, subprocess_env) -> None:
    """A key given on the command line (logged by Hydra's sweep launcher) and a provider error body quoting
    the key: neither reaches the console, the results, the checkpoint or the report."""
    secret = "sk-cmdline-secret-9876543210"
    fresh_fake.push(*[Action(status=401, echo_key=True)] * 20)
    proc = vision_eval(project, "-m", *judged(fresh_fake, project, f"judge.api_key={secret}", "judge.max_retries=0"),
                       "run.preflight=false", "hydra.sweep.dir=sweep", env=subprocess_env)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "Incorrect API key provided: ***" in proc.stdout  # the provider's message, the key masked
    assert secret not in proc.stdout + proc.stderr and "judge.api_key=***" in proc.stdout
    assert_no_secret(project / "sweep", secret, expect=("results.parquet", "run.json", "config.yaml", "multirun.yaml"))


def test_report_shows_dataset_relative_image_paths(project, subprocess_env) -> None:
    data = project / "data"
    rows = [json.loads(line) for line in (data / "rows.jsonl").read_text().splitlines()]
    rows[0]["images"] = ["images/missing.png"]
    (data / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = vision_eval(project, "evaluators=exact", "hydra.run.dir=r", env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    html = (project / "r" / "report.html").read_text()
    assert "images/red.png" in html and "images/missing.png" in html
    assert str(data) not in html


def test_terminal_bar_shows_counts_rate_errors_and_cost(project, subprocess_env) -> None:
    """On a terminal (a pseudo-terminal here) the live bar carries n/N, %, rows/s, errors, tokens and dollars,
    and it moves during the run."""
    import os
    import pty

    with FakeProviders(latency=0.25) as slow:
        env = {**subprocess_env, "OPENAI_API_KEY": KEY, "COLUMNS": "160"}
        command = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(project / "conf"),
                   *judged(slow, project, "judge.max_concurrency=2"), "hydra.run.dir=r", "dataset=mine"]  # fmt: skip
        pid, fd = pty.fork()
        if pid == 0:  # the child: the CLI with the pseudo-terminal as its stdout and stderr
            os.chdir(project)
            os.execvpe(sys.executable, command, env)
        chunks = []
        try:
            while data := os.read(fd, 65536):
                chunks.append(data)
        except OSError:  # the child closed the terminal
            pass
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode(errors="replace"))
    frames = [m.groups() for f in text.split("\r") if (m := re.match(r"desc [━╺╸ ]+ *(\d+)/12 +\d+% \S+ ?(.*)", f))]
    done = [int(n) for n, _ in frames]
    assert 0 < min(n for n in done if n) < 12 and max(done) == 12  # seen part-way, then finished
    assert re.search(r"[\d.]+ rows/s errors 0 tokens \S+ \$[\d.]+", frames[-1][1])


def test_a_where_filter_a_later_batch_refutes_says_what_the_run_spent(project, fresh_fake, subprocess_env) -> None:
    """Rows s8 and s9 (the third batch of four) make the filter's cast fail after two judged batches: exit 2 naming
    the key, the batches finished and the dollars spent on them, not "nothing was evaluated"."""
    where = "evaluators.desc.where=\"CAST(CASE WHEN id < 's8' THEN '1' ELSE id END AS INT) > 0\""
    proc = vision_eval(project, *judged(fresh_fake, project), where, "run.batch_size=4", "hydra.run.dir=r",
                       env=subprocess_env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-2].startswith("vision-eval: config error: evaluators.desc.where: invalid filter: ")
    stopped = r"the run stopped there, after 2 finished batches \(model calls: \$(\d+\.\d{6}) spent\)"
    said = re.fullmatch(stopped + r"; fix it and run again\.", lines[-1])
    assert said is not None and float(said[1]) > 0, lines[-1]
    assert row_calls(fresh_fake) == 8
    assert "nothing was evaluated" not in proc.stderr and "red circles" not in proc.stderr
