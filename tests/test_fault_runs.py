"""Provider and process faults: each case asserts the exact status, the reason, the requests that reached the
fake server, and that no row is lost or wrongly attributed (a good row beside the faulty one keeps its verdict)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

import vision_eval as ve
from vision_eval.llm.cache import CallCache
from vision_eval.testing.fake_providers import Action, FakeProviders

KEY = "sk-fault-matrix-key-000111"
GOOD_REPLY = '{"scores": {"visual_accuracy": 0.8, "completeness": 0.8, "clarity": 0.8, "relevance": 0.8}}'


@dataclass
class ProviderFault:
    """One faulty answer (or answers) to the faulty row's judge call, then what the run must say."""

    name: str
    actions: list[Action]
    status: str
    reason: str
    requests: int
    """Requests for the faulty row that must reach the fake (retries included)."""
    judge: dict[str, Any] = field(default_factory=dict)
    max_seconds: float = 20.0


PROVIDER_FAULTS = [
    ProviderFault("429_short_retry_after_is_honoured_then_succeeds",
                  [Action(status=429, retry_after=0.2)], "processed", "HTTP 429", 2),
    ProviderFault("429_huge_retry_after_fails_at_once_not_parked",
                  [Action(status=429, retry_after=3600)], "error", "longer than judge.max_retry_after_s=120", 1,
                  max_seconds=10),
    ProviderFault("500_is_retried_then_succeeds", [Action(status=500)], "processed", "HTTP 500", 2),
    ProviderFault("503_every_attempt_is_an_error_after_the_retries",
                  [Action(status=503)] * 2, "error", "failed after 2 attempt(s): HTTP 503", 2),
    ProviderFault("connection_reset_is_retried_then_succeeds",
                  [Action(reset=True)], "processed", "Server disconnected", 2),
    ProviderFault("hang_past_timeout_is_an_error_after_the_retries",
                  [Action(delay=3.0)] * 2, "error", "timeout after 0.5s", 2, judge={"timeout_s": 0.5}),
    ProviderFault("malformed_body_is_an_error", [Action(malformed=True)] * 2, "error", "malformed response body", 2),
    ProviderFault("empty_content_is_an_error_with_the_raw_reply", [Action(reply="")], "error",
                  "unusable grader reply", 1),
    ProviderFault("out_of_range_scores_are_an_error",
                  [Action(reply=GOOD_REPLY.replace("0.8", "7", 1))], "error", "outside", 1),
    ProviderFault("prose_is_an_error_with_the_raw_reply",
                  [Action(reply="The image looks fine to me.")], "error", "unusable grader reply", 1),
    ProviderFault("200_with_an_error_body_is_an_error",
                  [Action(body={"error": {"message": "overloaded"}})] * 2, "error", "overloaded", 2),
    ProviderFault("401_echoing_the_key_is_an_error_with_the_key_masked",
                  [Action(status=401, echo_key=True)], "error", "Incorrect API key provided: ***", 1),
    ProviderFault("400_is_not_retried", [Action(status=400)], "error", "failed after 1 attempt(s): HTTP 400", 1),
]  # fmt: skip


@pytest.fixture(scope="module")
def provider() -> Any:
    """A fake whose scripted faults hit only the row marked FAULT; every other request gets a good verdict."""
    state: dict[str, Any] = {"actions": []}

    def respond(request: Any) -> str:
        return GOOD_REPLY

    with FakeProviders(responder=respond) as fake:
        original = fake._handle

        async def handle(provider_name: str, request: Any) -> Any:
            body = await request.json()
            faulty = "FAULT" in json.dumps(body)
            with fake._lock:
                if faulty and state["actions"]:
                    fake.actions.appendleft(state["actions"].pop(0))
                state.setdefault("faulty_requests", 0)
                state["faulty_requests"] += faulty
            return await original(provider_name, request)

        fake._handle = handle  # type: ignore[method-assign]
        fake.state = state  # type: ignore[attr-defined]
        yield fake


@pytest.mark.parametrize("fault", PROVIDER_FAULTS, ids=[f.name for f in PROVIDER_FAULTS])
def test_provider_fault(fault: ProviderFault, provider: Any, tmp_path: Path) -> None:
    provider.reset()
    provider.state.update(actions=list(fault.actions), faulty_requests=0)
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    rows = [
        {"id": "faulty", "output": "FAULT red circles", "images": [str(tmp_path / "red.png")]},
        {"id": "good", "output": "red circles", "images": [str(tmp_path / "red.png")]},
    ]
    judge = {"model": "openai/gpt-4o-mini", "api_base": provider.openai_base, "api_key": KEY, "cache": False,
             "max_retries": 1, **fault.judge}  # fmt: skip
    started = time.monotonic()
    result = ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
                         judge=judge, output_dir=tmp_path / "run")  # fmt: skip
    elapsed = time.monotonic() - started
    out = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert sorted(out) == ["faulty", "good"]  # no row lost, none duplicated
    assert out["good"]["status"] == "processed" and out["good"]["score"] == pytest.approx(0.8)
    faulty = out["faulty"]
    assert faulty["status"] == fault.status, faulty
    text = (faulty["error"] or "") + (faulty["details"] or "")
    assert fault.reason in text, text
    assert provider.state["faulty_requests"] == fault.requests
    assert elapsed < fault.max_seconds
    written = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert KEY.encode() not in written


# --- process faults -----------------------------------------------------------------------------------------


def _judge_rows(folder: Path, n: int) -> list[dict[str, Any]]:
    (folder / "red.png").write_bytes(shape_png(RED, 2))
    (folder / "blue.png").write_bytes(shape_png(BLUE, 3))
    return [{"id": f"s{i}", "output": f"{'red' if i % 2 else 'blue'} shapes, row {i}",
             "images": [str(folder / ("red.png" if i % 2 else "blue.png"))]} for i in range(n)]  # fmt: skip


def test_sigint_mid_judge_run_exits_130_and_the_resume_resends_nothing_finished(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _judge_rows(tmp_path, 16)))
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "judged.yaml").write_text("desc:\n  type: llm_judge\n  prompt: image-description\n")
    env = {**subprocess_env, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=0.3) as fake:
        base = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(tmp_path / "conf"), "evaluators=judged",
                f"dataset.path={data}", "judge=openai", f"judge.api_base={fake.openai_base}", "judge.cache=false",
                "judge.max_concurrency=2", "run.preflight=false"]  # fmt: skip
        proc = subprocess.Popen([*base, "hydra.run.dir=r"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        while fake.calls < 5:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert "resume with run.resume=" in stderr and "Traceback" not in stderr
        journaled, sent = len(CallCache(tmp_path / "r" / "checkpoint")), fake.wait_idle()
        done = subprocess.run([*base, f"run.resume={tmp_path / 'r'}", "hydra.run.dir=r2"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert fake.calls - sent == 16 - journaled  # finished calls came from the journal
    assert pl.read_parquet(tmp_path / "r" / "results.parquet")["status"].unique().to_list() == ["processed"]


def test_two_runs_sharing_a_cache_agree_and_store_each_call_once(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(_judge_rows(tmp_path, 12)))
    script = (
        "import sys, json, vision_eval as ve\n"
        "rows = json.loads(open(sys.argv[1]).read())\n"
        "judge = {'model': 'openai/gpt-4o-mini', 'api_base': sys.argv[2], 'api_key': 'k', 'cache_dir': sys.argv[3]}\n"
        "r = ve.evaluate(rows, evaluators={'desc': {'type': 'llm_judge', 'prompt': 'image-description'}},"
        " judge=judge, output_dir=sys.argv[4])\n"
        "sys.exit(r.exit_code)\n"
    )
    with FakeProviders(latency=0.05) as fake:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    script,
                    str(rows_file),
                    fake.openai_base,
                    str(tmp_path / "cache"),
                    str(tmp_path / f"run{k}"),
                ],
                env=subprocess_env,
            )
            for k in (1, 2)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        calls = fake.calls
    first, second = (pl.read_parquet(tmp_path / f"run{k}" / "results.parquet").sort("sample_id") for k in (1, 2))
    stable = ["sample_id", "status", "score", "passed"]
    assert first.select(stable).equals(second.select(stable)) and first["status"].unique().to_list() == ["processed"]
    assert len(CallCache(tmp_path / "cache")) == 12 and 12 <= calls <= 24


def test_a_full_disk_while_writing_keeps_earlier_files_and_the_run_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC injected when samples.parquet is written: the files written before it stay whole, nothing half
    written is left, the run says so (exit 3) and keeps its checkpoint; the resume writes everything."""
    rows = [{"id": f"r{i}", "output": "a", "expected_output": "a" if i % 2 else "b"} for i in range(10)]
    real = pl.DataFrame.write_parquet

    def full_disk(self: pl.DataFrame, file: Any, *args: Any, **kwargs: Any) -> Any:
        if ".samples.parquet" in str(file):
            real(self, file, *args, **kwargs)  # a part of it reaches the disk, then the disk is full
            raise OSError(28, "No space left on device")
        return real(self, file, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full_disk)
    out = tmp_path / "run"
    result = ve.evaluate(rows, evaluators={"exact": {"type": "exact_match"}}, output_dir=out)
    assert result.exit_code == 3 and "No space left on device" in result.problems[-1]
    assert f"resume with run.resume={out}" in result.problems[-1]
    assert pl.read_parquet(out / "results.parquet").height == 10  # written before the failure: whole
    assert not (out / "samples.parquet").exists() and not list(out.glob(".*.tmp"))
    assert (out / "checkpoint").is_dir()
    monkeypatch.setattr(pl.DataFrame, "write_parquet", real)
    resumed = ve.evaluate(rows, evaluators={"exact": {"type": "exact_match"}}, run={"resume": str(out)})
    assert resumed.exit_code == 0 and resumed.run_info["resumed_batches"] == {"exact": 1}
    assert pl.read_parquet(out / "samples.parquet").height == 10 and not (out / "checkpoint").exists()


@pytest.mark.parametrize("share", [0.01, 0.1, 0.5])
def test_bad_rows_never_cost_a_good_row(share: float) -> None:
    """An evaluator that raises for a whole batch when any row in it is bad: only the bad rows are errors, each
    with its own reason, in 20,000-row batches."""
    step = round(1 / share)
    rows = [{"id": f"r{i}", "output": f"bad {i}" if i % step == step // 2 else f"good {i}"} for i in range(20_000)]
    result = ve.evaluate(rows, evaluators={"picky": {"_target_": "fault_helpers.Picky"}}, run={"batch_size": 20_000})
    out = result.results
    bad = out.filter(pl.col("sample_id").str.slice(1).cast(pl.Int64) % step == step // 2)
    good = out.filter(pl.col("sample_id").str.slice(1).cast(pl.Int64) % step != step // 2)
    assert out.height == 20_000 and out["sample_id"].n_unique() == 20_000
    assert good["status"].unique().to_list() == ["processed"] and good["score"].min() == 1.0
    assert bad["status"].unique().to_list() == ["error"] and bad.height == 20_000 // step
    expected = "evaluator raised ValueError: cannot read bad " + bad["sample_id"].str.slice(1)
    assert (bad["error"] == expected).all()  # each bad row carries its own reason


def test_run_wide_counters_are_recorded_once(fresh_fake: Any, tmp_path: Path) -> None:
    rows = _judge_rows(tmp_path, 4)
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "cache": False}
    stack = {"a": {"type": "llm_judge", "prompt": "image-description"},
             "b": {"type": "llm_judge", "prompt": "image-description", "judge": {"temperature": 0.3}}}  # fmt: skip
    result = ve.evaluate(rows, evaluators=stack, judge=judge, output_dir=tmp_path / "run")
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    per = [info["metrics"][name]["scheduler"]["calls"] for name in ("a", "b")]
    assert per == [4, 4] and info["scheduler"]["calls"] == 8 == fresh_fake.calls
    assert result.exit_code == 0
