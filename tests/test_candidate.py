"""Candidate generation: a model under test (a fake server, through the real call path) writes `output`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from secret_scan import assert_no_secret

import vision_eval as ve
from vision_eval.testing.fake_providers import Action, FakeProviders, FakeRequest

EXACT = {"colour": {"type": "exact_match"}}


def answer_colour(request: FakeRequest) -> str:
    """A candidate that looks at the pixels: 'good' names the dominant colour, 'bad' always says green."""
    if "bad" in request.model:
        return "green"
    return request.images[0].colour if request.images else "no image"


@pytest.fixture(scope="module")
def candidate_server():
    with FakeProviders(responder=answer_colour) as server:
        yield server


def rows(image_dir: Path) -> list[dict]:
    return [
        {
            "id": "r",
            "input": "Which colour dominates?",
            "images": [str(image_dir / "red.png")],
            "expected_output": "red",
        },
        {
            "id": "b",
            "input": "Which colour dominates?",
            "images": [str(image_dir / "blue.png")],
            "expected_output": "blue",
        },
    ]


def candidate(server: FakeProviders, tmp_path: Path, model: str = "openai/good", **extra) -> dict:
    return {"model": model, "api_base": server.openai_base, "api_key": "sk-test", "cache_dir": str(tmp_path / "cache"),
            **extra}  # fmt: skip


def test_candidate_outputs_are_evaluated(candidate_server, image_dir, tmp_path) -> None:
    candidate_server.reset()
    result = ve.evaluate(
        rows(image_dir), evaluators=EXACT, candidate=candidate(candidate_server, tmp_path), output_dir=tmp_path / "run"
    )
    assert dict(zip(result.samples["id"], result.samples["output"], strict=True)) == {"r": "red", "b": "blue"}
    assert result.results["score"].to_list() == [1.0, 1.0]
    assert candidate_server.calls == 2 and all(len(r.images) == 1 for r in candidate_server.requests)
    samples = pl.read_parquet(tmp_path / "run" / "samples.parquet")
    assert samples["candidate_model"].to_list() == ["openai/good"] * 2
    assert samples["candidate_input_tokens"].min() > 0 and samples["candidate_cached"].to_list() == [False, False]
    assert "Which colour dominates?" in candidate_server.requests[0].text

    bad = ve.evaluate(rows(image_dir), evaluators=EXACT, candidate=candidate(candidate_server, tmp_path, "openai/bad"))
    assert bad.results["score"].to_list() == [0.0, 0.0]


def test_rerun_hits_the_cache(candidate_server, image_dir, tmp_path) -> None:
    candidate_server.reset()
    ve.evaluate(rows(image_dir), evaluators=EXACT, candidate=candidate(candidate_server, tmp_path))
    again = ve.evaluate(rows(image_dir), evaluators=EXACT, candidate=candidate(candidate_server, tmp_path))
    assert candidate_server.calls == 2
    assert again.samples["candidate_cached"].to_list() == [True, True]


def test_failed_generation_skips_that_rows_evaluators(image_dir, tmp_path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    data = [*rows(image_dir), {"id": "m", "input": "?", "images": ["missing.png"], "expected_output": "x"}]
    result = ve.evaluate(
        data,
        evaluators=EXACT,
        dataset={"image_root": str(image_dir)},
        candidate={"model": "openai/good", "api_base": dead, "api_key": "k", "max_retries": 0, "cache": False},
    )
    assert result.results["status"].to_list() == ["skipped"] * 3
    reasons = [json.loads(d)["reason"] for d in result.results["details"]]
    assert all(r.startswith("candidate generation failed: ") for r in reasons)
    assert "candidate call failed" in reasons[0] and "not found" in reasons[2]
    assert result.samples["candidate_error"].null_count() == 0


def test_bad_candidate_prompt_is_a_config_error(image_dir) -> None:
    with pytest.raises(ve.ConfigError) as info:
        ve.evaluate(rows(image_dir), evaluators=EXACT, candidate={"model": "openai/x", "prompt": "{{ input"})
    assert info.value.key == "candidate.prompt"


def test_multirun_over_two_candidates_with_joblib_and_a_leaderboard(
    candidate_server, image_dir, tmp_path, subprocess_env
) -> None:
    candidate_server.reset()
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows(image_dir)) + "\n")
    env = dict(subprocess_env, FAKE_KEY="sk-test")
    args = [
        sys.executable,
        "-m",
        "vision_eval.cli",
        "-m",
        "hydra/launcher=joblib",
        f"dataset.path={data}",
        "evaluators=basic",
        "evaluators.exact.where=null",
        "candidate.model=openai/good,openai/bad",
        f"candidate.api_base={candidate_server.openai_base}",
        "candidate.api_key_env=FAKE_KEY",
        f"candidate.cache_dir={tmp_path / 'cache'}",
        "hydra.sweep.dir=sweep",
    ]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    generations = [r for r in candidate_server.requests if r.images]
    pings = [r for r in candidate_server.requests if r.text == "Reply with the word OK."]
    assert len(generations) == 4 and len(pings) == 2 and candidate_server.calls == 6  # one preflight per model
    from vision_eval.leaderboard import write_leaderboard

    board, _ = write_leaderboard([tmp_path / "sweep"])
    scores = dict(zip(board["candidate"], board["mean_score"], strict=True))
    assert scores == {"openai/good": 1.0, "openai/bad": 0.0}


def test_the_candidate_error_quoting_the_key_is_redacted_in_every_file(image_dir, tmp_path) -> None:
    """The model under test answers one row with a 401 whose body quotes the key: the failure is recorded (its
    reason kept, the key masked) and the key is in no file of the run, read back decoded."""
    secret = "sk-test-Abc123XyZ987secret"
    with FakeProviders(responder=answer_colour) as server:
        server.push(Action(status=401, echo_key=True))
        result = ve.evaluate(
            rows(image_dir),
            evaluators=EXACT,
            candidate={
                "model": "openai/good",
                "api_base": server.openai_base,
                "api_key": secret,
                "cache": False,
                "max_retries": 0,
                "max_concurrency": 1,
            },
            run={"preflight": False, "junit": "junit.xml", "progress": False},
            output_dir=tmp_path / "run",
        )
        assert server.requests[0].headers["Authorization"] == f"Bearer {secret}"  # the key was sent, and echoed
    errors = result.samples["candidate_error"].drop_nulls().to_list()
    assert len(errors) == 1 and "Incorrect API key provided: ***" in errors[0], errors
    assert sorted(result.results["status"].to_list()) == ["processed", "skipped"]
    assert result.exit_code == 3  # one failed generation in two is over the candidate's max_error_rate
    written = ("samples.parquet", "results.parquet", "run.json", "report.html", "junit.xml")
    assert_no_secret(tmp_path / "run", secret, expect=written)


def test_the_candidate_gate_is_inclusive(image_dir, tmp_path) -> None:
    """One failed generation in ten at the default ``run.max_error_rate`` (0.1) holds the candidate's gate; two do
    not (exit 3)."""
    data = [{**row, "id": f"{row['id']}{i}"} for i in range(5) for row in rows(image_dir)]
    spec = {"max_retries": 0, "max_concurrency": 1, "cache": False}
    codes = {}
    for failures in (1, 2):
        with FakeProviders(responder=answer_colour) as server:
            server.push(*[Action(status=400)] * failures)
            result = ve.evaluate(data, evaluators=EXACT, candidate=candidate(server, tmp_path, **spec))
        (gate,) = [g for g in result.run_info["gates"] if g["evaluator"] == "candidate"]
        assert gate["value"] == failures / 10 and gate["limit"] == 0.1, gate
        assert result.samples["candidate_error"].null_count() == 10 - failures
        codes[failures] = (gate["passed"], result.exit_code, gate["message"].split(":")[1])
    assert codes == {
        1: (True, 0, " 1 of 10 generations failed (10.0% \u2264 10.0%)"),  # the comparison that held
        2: (False, 3, " 2 of 10 generations failed (20.0% > 10.0%)"),
    }
