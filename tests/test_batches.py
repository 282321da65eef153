"""Batch mode (``judge.batch: true``) through the real call path against the fake providers' batch endpoints:
OpenAI Batch, Anthropic Message Batches and Gemini batch mode, their results, failures, expiry, cancellation,
prices, budget, cache, candidate generation, progress and the dry run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

import vision_eval as ve
from vision_eval.llm import batches, prices
from vision_eval.testing.fake_providers import Action, FakeProviders

pytestmark = pytest.mark.filterwarnings(
    "ignore:coroutine 'connect_tcp.<locals>.try_connect' was never awaited:RuntimeWarning"  # anyio, under the SDKs
)
MODELS = ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"]
JUDGE = {"desc": {"type": "llm_judge", "prompt": "image-description"}}


@pytest.fixture(autouse=True)
def quick_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collectors send a job after 0.3 s without new requests (2 s in a real run), to keep tests short."""
    monkeypatch.setattr(batches, "IDLE_S", 0.3)


@pytest.fixture
def images(tmp_path: Path) -> Path:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    (tmp_path / "blue.png").write_bytes(shape_png(BLUE, 3))
    return tmp_path


def rows(folder: Path, n: int = 6) -> list[dict[str, Any]]:
    """Rows alternating a red and a blue image; every third output names the wrong colour; all requests differ."""
    out = []
    for i in range(n):
        colour = "red" if i % 2 else "blue"
        said = colour if i % 3 else ("blue" if colour == "red" else "red")
        out.append({"id": f"r{i}", "input": "Describe the image.", "output": f"{said} circles (row {i})",
                    "images": [str(folder / f"{colour}.png")]})  # fmt: skip
    return out


def judge(fake: FakeProviders, model: str, **extra: Any) -> dict[str, Any]:
    base = fake.openai_base if model.startswith("openai/") else fake.base
    return {"model": model, "api_base": base, "api_key": "k", "cache": False, "batch": True, "batch_poll_s": 0.1,
            **extra}  # fmt: skip


def details(result: Any) -> dict[str, dict[str, Any]]:
    frame = result.results
    return {sid: json.loads(d) if d else {} for sid, d in zip(frame["sample_id"], frame["details"], strict=True)}


@pytest.mark.parametrize("model", MODELS)
def test_a_batch_judge_grades_the_pixels_through_the_provider_batch_api(
    model: str, fresh_fake: FakeProviders, images: Path, tmp_path: Path
) -> None:
    data = rows(images)
    result = ve.evaluate(data, evaluators=JUDGE, judge=judge(fresh_fake, model), output_dir=tmp_path / "run")
    frame = result.results.sort("sample_id")
    assert frame["status"].to_list() == ["processed"] * 6
    right = [bool(i % 3) for i in range(6)]  # the fake scores 0.9 when the text names the colour it sees
    assert frame["score"].to_list() == pytest.approx([0.9 if ok else 0.3 for ok in right])
    provider = model.split("/")[0]
    assert fresh_fake.calls == 0 and fresh_fake.batches.created == {provider: 1}  # one job, no live call
    assert sorted(i.colour for r in fresh_fake.requests for i in r.images) == ["blue"] * 3 + ["red"] * 3
    batch_in, batch_out, _ = prices.batch_prices(model)
    expected = frame["input_tokens"] * batch_in + frame["output_tokens"] * batch_out
    assert (frame["cost_usd"] - expected).abs().max() < 1e-12  # each row at the batch price
    stats = result.run_info["scheduler"]
    assert stats["batched"] == 6 and stats["calls"] == 0 and stats["by_transport"] == {"batch": 6}
    assert stats["batch"]["jobs"] == {"submitted": 1, "resumed": 0, "done": 1, "running": 0}
    assert stats["batch"]["price"] == {model: prices.BATCH_PRICE_FROM_MAP}
    assert stats["batch_cost_usd"] == pytest.approx(frame["cost_usd"].sum(), rel=1e-6)
    live_in, live_out = prices.token_prices(model)
    live = (frame["input_tokens"] * live_in + frame["output_tokens"] * live_out).sum()
    assert stats["batch_live_cost_usd"] == pytest.approx(live, rel=1e-6)
    assert stats["batch_saving_usd"] == pytest.approx(live - frame["cost_usd"].sum(), rel=1e-6) and live > 0
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["scheduler"]
    assert saved["batch_saving_usd"] == stats["batch_saving_usd"]


def test_batch_results_fill_the_cache_so_a_rerun_sends_nothing(
    fresh_fake: FakeProviders, images: Path, tmp_path: Path
) -> None:
    settings = judge(fresh_fake, MODELS[0], cache=True, cache_dir=str(tmp_path / "cache"))
    first = ve.evaluate(rows(images), evaluators=JUDGE, judge=settings)
    second = ve.evaluate(rows(images), evaluators=JUDGE, judge=settings)
    assert fresh_fake.batches.total_created == 1 and fresh_fake.calls == 0
    assert second.results["cached"].all() and second.results["cost_usd"].sum() == 0
    assert second.results.sort("sample_id")["score"].equals(first.results.sort("sample_id")["score"])


@pytest.mark.parametrize("model", MODELS)
def test_a_failed_request_goes_into_the_next_job_and_a_hopeless_one_is_a_row_error(
    model: str, fresh_fake: FakeProviders, images: Path
) -> None:
    fresh_fake.push(Action(status=500), Action(status=400))  # the first two requests the job answers
    result = ve.evaluate(rows(images), evaluators=JUDGE, judge=judge(fresh_fake, model))
    frame = result.results
    errors = frame.filter(pl.col("status") == "error")
    assert errors.height == 1 and "fake error 400" in errors["error"][0] and "1 attempt(s)" in errors["error"][0]
    retried = [d for d in details(result).values() if d.get("attempts") == 2]
    assert len(retried) == 1 and "fake error 500" in retried[0]["retried_failures"][0]
    assert frame.filter(pl.col("status") == "processed").height == 5
    assert fresh_fake.batches.total_created == 2 and fresh_fake.calls == 0  # the retry went into a second job


def test_with_no_retries_left_a_failed_request_is_a_row_error_with_the_reason(
    fresh_fake: FakeProviders, images: Path
) -> None:
    fresh_fake.push(Action(status=503))
    result = ve.evaluate(rows(images), evaluators=JUDGE, judge=judge(fresh_fake, MODELS[0], max_retries=0))
    errors = result.results.filter(pl.col("status") == "error")
    assert errors.height == 1 and "HTTP 503: fake error 503" in errors["error"][0]
    assert fresh_fake.batches.total_created == 1


@pytest.mark.parametrize("model", MODELS)
def test_expired_requests_go_into_the_next_job(model: str, fresh_fake: FakeProviders, images: Path) -> None:
    fresh_fake.batches.expire_next, fresh_fake.batches.expire_after = 1, 2
    result = ve.evaluate(rows(images), evaluators=JUDGE, judge=judge(fresh_fake, model))
    assert result.results["status"].to_list() == ["processed"] * 6
    expired = [d for d in details(result).values() if d.get("attempts") == 2]
    assert len(expired) == 4 and all("expired" in d["retried_failures"][0] for d in expired)
    assert fresh_fake.batches.total_created == 2


@pytest.mark.parametrize("model", MODELS)
def test_a_status_check_that_is_never_answered_times_out_and_is_asked_again(
    model: str, fresh_fake: FakeProviders, images: Path
) -> None:
    fresh_fake.batches.stall_polls = 1  # the first status check is lost: no answer for 60 s
    fresh_fake.batches.stall_s = 60.0
    started = time.monotonic()
    try:
        result = ve.evaluate(rows(images), evaluators=JUDGE, judge=judge(fresh_fake, model, timeout_s=1.0))
        elapsed = time.monotonic() - started
    finally:
        fresh_fake.batches.release()
    assert result.results["status"].to_list() == ["processed"] * 6
    assert elapsed < 40  # judge.timeout_s and a retry, not the HTTP client's 600 s or the stalled answer's 60 s
    assert fresh_fake.batches.stalled == 1 and fresh_fake.batches.total_created == 1


@pytest.mark.parametrize("model", MODELS)
def test_a_job_past_batch_max_wait_h_is_cancelled_and_its_rows_say_so(
    model: str, fresh_fake: FakeProviders, images: Path
) -> None:
    fresh_fake.batches.hold = True  # the job would never end by itself
    settings = judge(fresh_fake, model, batch_max_wait_h=1.5 / 3600)
    result = ve.evaluate(rows(images, 3), evaluators=JUDGE, judge=settings)
    assert result.results["status"].to_list() == ["error"] * 3
    assert all("did not finish within judge.batch_max_wait_h" in e for e in result.results["error"])
    assert fresh_fake.batches.cancels == 1 and fresh_fake.batches.total_created == 1  # cancelled, not resent


def test_the_budget_reserves_at_the_batch_price(fresh_fake: FakeProviders, images: Path) -> None:
    """One call's upper bound fits the budget at the batch price but not at the live price: batch mode runs rows
    (one job at a time, as the budget frees up) and skips the rest once spent."""
    model = MODELS[0]
    settings = judge(fresh_fake, model, max_tokens=1000)
    live, batch = prices.token_prices(model), prices.batch_prices(model)
    budget = 0.7 * 1000 * live[1] + 0.3 * 1000 * batch[1]  # below one live call's bound, above one batch call's
    result = ve.evaluate(rows(images, 8), evaluators=JUDGE, judge=settings, run={"max_cost_usd": budget})
    statuses = result.results["status"].value_counts()
    counts = dict(zip(statuses["status"], statuses["count"], strict=True))
    assert counts.get("processed", 0) >= 1 and counts.get("skipped", 0) >= 1, counts
    skipped = result.results.filter(pl.col("status") == "skipped")
    assert all("budget exhausted" in d for d in skipped["details"])
    assert result.run_info["spending"]["spent_usd"] <= budget
    assert result.exit_code == 3


def test_a_provider_without_a_batch_api_falls_back_to_live_calls_with_a_warning(
    fresh_fake: FakeProviders, images: Path
) -> None:
    settings = {**judge(fresh_fake, "hosted_vllm/llava"), "api_base": fresh_fake.openai_base}
    with pytest.warns(UserWarning, match="hosted_vllm/llava: its provider has no batch API"):
        result = ve.evaluate(rows(images, 4), evaluators=JUDGE, judge=settings)
    assert result.results["status"].to_list() == ["processed"] * 4
    assert fresh_fake.calls == 4 and fresh_fake.batches.total_created == 0
    assert "hosted_vllm/llava" in result.run_info["scheduler"]["batch"]["live_fallback"]


def test_identical_requests_are_sent_once(fresh_fake: FakeProviders, images: Path) -> None:
    data = rows(images, 2)
    data.append({**data[0], "id": "again"})
    result = ve.evaluate(data, evaluators=JUDGE, judge=judge(fresh_fake, MODELS[0]))
    frame = result.results.sort("sample_id")
    assert len(fresh_fake.requests) == 2 and frame["status"].to_list() == ["processed"] * 3
    twins = frame.filter(pl.col("sample_id").is_in(["r0", "again"])).sort("cached")
    assert twins["score"].n_unique() == 1 and twins["cached"].to_list() == [False, True]
    assert twins["cost_usd"][0] > 0 and twins["cost_usd"][1] == 0  # paid once, by whichever row asked first


def test_a_gemini_batch_request_refuses_a_parameter_gemini_cannot_take(fresh_fake: FakeProviders, images: Path) -> None:
    settings = judge(fresh_fake, MODELS[2], params={"logit_bias": {"1": 2}})
    result = ve.evaluate(rows(images, 2), evaluators=JUDGE, judge=settings)
    assert result.results["status"].to_list() == ["error"] * 2
    assert "logit_bias cannot be sent in a Gemini batch request" in result.results["error"][0]
    assert fresh_fake.batches.total_created == 0


def test_a_batch_candidate_writes_its_outputs_through_a_job(fresh_fake: FakeProviders, images: Path) -> None:
    data = [{k: v for k, v in r.items() if k != "output"} | {"expected_output": "x", "n": i}
            for i, r in enumerate(rows(images, 4))]  # fmt: skip
    candidate = {**judge(fresh_fake, MODELS[0]), "prompt": "Row {{ n }}: describe {{ image_reference }}"}
    result = ve.evaluate(data, evaluators={"exact": {"type": "exact_match"}}, candidate=candidate)
    outputs = result.samples["output"].to_list()
    assert all(o and "assessment" in o for o in outputs) and fresh_fake.batches.created == {"openai": 1}
    assert fresh_fake.calls == 0 and result.samples["candidate_cost_usd"].min() > 0


def test_the_progress_line_counts_the_jobs(
    fresh_fake: FakeProviders, images: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh_fake.batches.job_seconds = 1.2
    run = {"progress": True, "progress_interval_s": 0.2}
    ve.evaluate(rows(images, 3), evaluators=JUDGE, judge=judge(fresh_fake, MODELS[0]), run=run)
    err = capsys.readouterr().err
    assert "jobs 1 submitted / 1 in progress / 0 done" in err  # while the job runs
    assert "desc 3/3 (100%) done in" in err and "jobs 1 submitted / 0 in progress / 1 done" in err


def test_the_dry_run_shows_live_and_batch_prices(
    fresh_fake: FakeProviders, images: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vision_eval.dryrun import print_plan

    result = ve.evaluate(rows(images), evaluators=JUDGE, judge=judge(fresh_fake, MODELS[0]), run={"dry_run": True})
    plan = result.run_info["plan"]
    line = plan["lines"][0]
    assert line["batch"] and line["calls"] == 6 and fresh_fake.batches.total_created == 0
    assert line["batch_max_usd"] == pytest.approx(line["max_usd"] / 2)  # gpt-4o-mini's map price is half
    assert line["batch_input_usd"] == pytest.approx(line["input_usd"] / 2)
    assert plan["planned_max_usd"] == pytest.approx(plan["batch_max_usd"])
    print_plan(plan, [])
    out = capsys.readouterr().out
    assert "max $ batch" in out and "gpt-4o-mini (batch)" in out and "this run batches where marked" in out
