"""``llm_judge`` end to end through ``vision_eval.evaluate`` and the fake provider servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BLUE, GREEN, RED, shape_png
from secret_scan import assert_no_secret

import vision_eval as ve
from vision_eval.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _rows(image_dir: Path) -> list[dict]:
    return [
        {
            "id": "a",
            "input": "Describe.",
            "output": "Two red circles on white.",
            "images": [str(image_dir / "red.png")],
        },
        {"id": "b", "input": "Describe.", "output": "A green square.", "images": [str(image_dir / "blue.png")]},
    ]


def _judge(fake, tmp_path: Path, **extra) -> dict:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "sk-test",
            "cache_dir": str(tmp_path / "cache"), **extra}  # fmt: skip


DESC = {"desc": {"type": "llm_judge", "prompt": "image-description"}}


def test_without_judge_rows_are_skipped_with_the_request_plan(image_dir) -> None:
    result = ve.evaluate(_rows(image_dir), evaluators=DESC)
    assert result.results["status"].to_list() == ["skipped", "skipped"]
    details = json.loads(result.results["details"][0])
    assert "judge.model is null" in details["reason"]
    request = details["request"]
    assert request["image_count"] == 1 and request["images"][0]["size"] == [96, 64]
    assert "Two red circles" in request["text"] and "Image 1" in request["text"]
    assert "base64" not in result.results["details"][0]
    # 96x64 image -> 255 tokens (OpenAI formula) plus the text at 4 chars/token
    assert request["estimated_input_tokens"] == 255 + -(-len(request["text"]) // 4)
    assert result.run_info["metrics"]["desc"]["planned_calls"] == 2


def test_judge_grades_from_pixels_with_tokens_cost_and_dimensions(fresh_fake, image_dir, tmp_path) -> None:
    result = ve.evaluate(_rows(image_dir), evaluators=DESC, judge=_judge(fresh_fake, tmp_path))
    rows = result.results.sort("sample_id")
    assert rows["status"].to_list() == ["processed", "processed"]
    assert rows["score"].to_list() == pytest.approx([0.9, 0.3])  # red matches the pixels, "green" does not
    assert rows["passed"].to_list() == [True, False]
    assert rows["cached"].to_list() == [False, False]
    assert all(t > 255 for t in rows["input_tokens"].to_list())
    # gpt-4o-mini prices: 0.15 $/M in, 0.6 $/M out
    expected_cost = [i * 0.15e-6 + o * 0.6e-6 for i, o in zip(rows["input_tokens"], rows["output_tokens"])]
    assert rows["cost_usd"].to_list() == pytest.approx(expected_cost)
    dims = result.dimensions.filter(sample_id="a")
    assert dims["dimension"].to_list() == ["visual_accuracy", "completeness", "clarity", "relevance"]
    assert dims["weight"].to_list() == [0.4, 0.3, 0.2, 0.1]
    details = json.loads(rows["details"][0])
    sent = details["images"][0]
    assert sent["policy"]["max_side"] is None and len(sent["sha256"]) == 64
    # an openai/ model at a server of the user's own (the fake's api_base) gets the dataset's image as it is
    assert sent["sizing"] == "server: the source bytes" and sent["encoding"] == "source bytes"
    assert sent["sha256"] == sent["source_sha256"] and sent["column"] == "images"
    assert details["judge_total"] == 0.99 and details["details"]["seen"][0]["colour"] == "red"
    assert "sk-test" not in json.dumps(result.run_info)
    request = fresh_fake.requests[0]
    assert request.headers["Authorization"] == "Bearer sk-test"


def test_unknown_price_stays_null(fresh_fake, image_dir, tmp_path) -> None:
    result = ve.evaluate(
        _rows(image_dir)[:1], evaluators=DESC, judge=_judge(fresh_fake, tmp_path, model="openai/my-vlm")
    )
    assert result.results["status"][0] == "processed"
    assert result.results["cost_usd"][0] is None and result.run_info["totals"]["cost_usd"] is None


def test_comparison_judge_sends_images_in_order(fresh_fake, tmp_path) -> None:
    (tmp_path / "before.png").write_bytes(shape_png(RED, 1))
    (tmp_path / "after.png").write_bytes(shape_png(GREEN, 3))
    rows = [{"id": "c", "input": "What changed?", "output": "The red circle became three green ones.",
             "images": [str(tmp_path / "before.png"), str(tmp_path / "after.png")]}]  # fmt: skip
    result = ve.evaluate(rows, evaluators={"cmp": {"type": "llm_judge", "prompt": "comparison"}},
                         judge=_judge(fresh_fake, tmp_path))  # fmt: skip
    seen = [(i.label, i.colour, i.shapes) for i in fresh_fake.requests[0].images]
    assert seen == [("Image 1", "red", 1), ("Image 2", "green", 3)]
    assert result.results["score"][0] == pytest.approx(0.9)
    text = fresh_fake.requests[0].text
    assert 'Image 1 is the "before" image' in text and 'Image 2 is the "after" image' in text


@pytest.mark.parametrize(
    ("model", "base_attr", "provider"),
    [("anthropic/claude-3-5-sonnet-20240620", "base", "anthropic"), ("gemini/gemini-1.5-flash", "base", "gemini"),
     ("bedrock/converse/us.amazon.nova-lite-v1:0", "base", "bedrock")],
)  # fmt: skip
def test_per_evaluator_judge_override_reaches_each_provider(
    fresh_fake, aws_env, image_dir, tmp_path, model, base_attr, provider
) -> None:
    override = {"model": model, "api_base": getattr(fresh_fake, base_attr), "api_key": "k", "cache": False}
    evaluators = {"desc": {"type": "llm_judge", "prompt": "image-description", "judge": override}}
    result = ve.evaluate(_rows(image_dir), evaluators=evaluators)  # the run has no judge; the evaluator has one
    assert fresh_fake.calls_by_provider == {provider: 2}
    assert sorted(result.results["score"].to_list()) == pytest.approx([0.3, 0.9])


def test_chat_format_input_images_reach_the_judge(fresh_fake, tmp_path) -> None:
    import base64

    chat = [{"role": "user", "content": [{"type": "text", "text": "What colour?"},
             {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                          "data": base64.b64encode(shape_png(BLUE, 2)).decode()}}]}]  # fmt: skip
    rows = [{"id": "x", "input": json.dumps(chat), "output": "It is blue."}]
    evaluators = {"d": {"type": "llm_judge", "prompt": "image-description", "images": []}}
    result = ve.evaluate(rows, evaluators=evaluators, judge=_judge(fresh_fake, tmp_path))
    assert [i.colour for i in fresh_fake.requests[0].images] == ["blue"]
    assert "user: What colour? Image 1" in fresh_fake.requests[0].text
    assert result.results["score"][0] == pytest.approx(0.9)


def test_bad_image_is_a_row_error_and_the_run_goes_on(fresh_fake, image_dir, tmp_path) -> None:
    (image_dir / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    rows = [*_rows(image_dir), {"id": "z", "output": "x", "images": [str(image_dir / "broken.png")]}]
    result = ve.evaluate(rows, evaluators=DESC, judge=_judge(fresh_fake, tmp_path)).results.sort("sample_id")
    assert result["status"].to_list() == ["processed", "processed", "error"]
    assert "Image 1" in result["error"][2] and ("corrupt" in result["error"][2] or "truncated" in result["error"][2])
    assert fresh_fake.calls == 2


def test_malformed_replies_are_errors_with_the_raw_reply(fresh_fake, image_dir, tmp_path) -> None:
    fresh_fake.push({"reply": "The description looks fine to me."},
                    {"reply": '{"scores": {"visual_accuracy": 0.5}, "reasoning": "partial"}'})  # fmt: skip
    judge = _judge(fresh_fake, tmp_path, cache=False, max_concurrency=1)
    result = ve.evaluate(_rows(image_dir), evaluators=DESC, judge=judge, run={"concurrency": 1}).results
    assert result["status"].to_list() == ["error", "error"]
    assert result["score"].to_list() == [None, None]
    errors = sorted(result["error"].to_list())
    assert "no JSON" in errors[0] and "misses dimension 'completeness'" in errors[1]
    replies = sorted(json.loads(d)["reply"] for d in result["details"])
    assert replies[0] == "The description looks fine to me." and replies[1].startswith('{"scores"')


def test_retries_429_and_500_then_success(fresh_fake, image_dir, tmp_path) -> None:
    fresh_fake.push({"status": 429, "retry_after": 0.05}, {"status": 500}, {"status": 503, "retry_after": 0.01})
    judge = _judge(fresh_fake, tmp_path, cache=False, max_concurrency=1)
    result = ve.evaluate(_rows(image_dir)[:1], evaluators=DESC, judge=judge, run={"concurrency": 1})
    row = result.results.row(0, named=True)
    assert row["status"] == "processed"
    details = json.loads(row["details"])
    assert details["attempts"] == 4 and len(details["retried_failures"]) == 3
    assert "429" in details["retried_failures"][0]
    assert fresh_fake.calls == 4
    assert result.run_info["metrics"]["desc"]["scheduler"]["retries"] == 3


def test_exhausted_retries_error_the_row_only(fresh_fake, image_dir, tmp_path) -> None:
    fresh_fake.push(*[{"status": 500}] * 3)  # both rows fail once; whichever retries first fails again
    judge = _judge(fresh_fake, tmp_path, cache=False, max_retries=1, max_concurrency=1)
    result = ve.evaluate(_rows(image_dir), evaluators=DESC, judge=judge, run={"concurrency": 1}).results
    assert sorted(result["status"].to_list()) == ["error", "processed"]
    error = result.filter(status="error").row(0, named=True)
    assert "after 2 attempt(s)" in error["error"] and "500" in error["error"]
    assert len(json.loads(error["details"])["failures"]) == 2


def test_timeout_is_retried_then_reported(fresh_fake, image_dir, tmp_path) -> None:
    fresh_fake.push({"delay": 1.5}, {"delay": 1.5})
    judge = _judge(fresh_fake, tmp_path, cache=False, max_retries=1, timeout_s=0.3)
    result = ve.evaluate(_rows(image_dir)[:1], evaluators=DESC, judge=judge).results
    assert result["status"][0] == "error" and "timeout" in result["error"][0]


def test_non_retryable_400_fails_at_once(fresh_fake, image_dir, tmp_path) -> None:
    fresh_fake.push({"status": 400})
    judge = _judge(fresh_fake, tmp_path, cache=False, max_concurrency=1)
    result = ve.evaluate(_rows(image_dir)[:1], evaluators=DESC, judge=judge).results
    assert result["status"][0] == "error" and fresh_fake.calls == 1


def test_cache_hits_across_runs_and_threshold_changes(fresh_fake, image_dir, tmp_path) -> None:
    judge = _judge(fresh_fake, tmp_path)
    first = ve.evaluate(_rows(image_dir), evaluators=DESC, judge=judge)
    assert fresh_fake.calls == 2
    fresh_fake.reset()
    stricter = {"desc": {"type": "llm_judge", "prompt": "image-description", "threshold": 0.95}}
    second = ve.evaluate(_rows(image_dir), evaluators=stricter, judge=judge)
    assert fresh_fake.calls == 0
    assert second.results["cached"].to_list() == [True, True]
    assert second.results["score"].to_list() == first.results["score"].to_list()
    assert second.results["passed"].to_list() == [False, False]
    assert second.run_info["totals"]["cache_hits"] == 2 and second.run_info["totals"]["cost_usd"] == 0.0
    changed = ve.evaluate(_rows(image_dir), evaluators=DESC, judge={**judge, "temperature": 0.5})
    assert fresh_fake.calls == 2 and changed.results["cached"].to_list() == [False, False]


def test_cache_shared_by_concurrent_processes(tmp_path) -> None:
    script = (
        "import sys\nfrom vision_eval.llm.cache import CallCache\n"
        "c = CallCache(sys.argv[1])\n"
        "for i in range(200): c.put(f'{sys.argv[2]}-{i}', 'm', {'text': str(i)})\n"
        "print(sum(c.get(f'{sys.argv[2]}-{i}') is not None for i in range(200)))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), f"p{k}"], stdout=subprocess.PIPE, env=env)
             for k in range(3)]  # fmt: skip
    outputs = [p.communicate(timeout=60)[0].decode().strip() for p in procs]
    assert outputs == ["200", "200", "200"]
    from vision_eval.llm.cache import CallCache

    assert len(CallCache(tmp_path)) == 600


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"weights": {"visual_accuracy": 0, "completeness": 0, "clarity": 0, "relevance": 0}}, "sum to zero"),
        ({"weights": {"sharpness": 1}}, "unknown dimension"),
        ({"prompt": "no-such-judge"}, "no judge named"),
        ({"judge": {"model": "gpt-3.5-turbo"}}, "not vision-capable"),
        ({"judge": {"temperature": "hot"}}, "judge.temperature"),
    ],
)
def test_config_errors_before_the_run(spec, message) -> None:
    evaluators = {"desc": {"type": "llm_judge", "prompt": "image-description", **spec}}
    with pytest.raises(ConfigError, match=message) as info:
        ve.evaluate([{"id": "a", "output": "x"}], evaluators=evaluators)
    assert info.value.key == "evaluators.desc"


def test_run_judge_that_is_not_vision_capable_is_refused() -> None:
    with pytest.raises(ConfigError, match="not vision-capable"):
        ve.evaluate([{"id": "a", "output": "x"}], evaluators=DESC, judge="gpt-3.5-turbo")


def test_keys_never_reach_saved_files(fresh_fake, image_dir, tmp_path) -> None:
    override = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "sk-evaluator-secret",
                "cache": False}  # fmt: skip
    evaluators = {"desc": {"type": "llm_judge", "prompt": "image-description", "judge": override}}
    out = tmp_path / "run"
    ve.evaluate(_rows(image_dir), evaluators=evaluators, judge=_judge(fresh_fake, tmp_path), output_dir=out)
    assert_no_secret(out, "sk-evaluator-secret", expect=("results.parquet", "samples.parquet", "run.json"))
    assert_no_secret(out, "sk-test")
    assert fresh_fake.requests[0].headers["Authorization"] == "Bearer sk-evaluator-secret"


def test_every_image_source_form_reaches_the_judge_in_order(fresh_fake, tmp_path) -> None:
    import base64
    import io

    from PIL import Image

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "red.png").write_bytes(shape_png(RED, 1))
    (tmp_path / "outside.png").write_bytes(shape_png(RED, 1))
    blue, green = shape_png(BLUE, 2), shape_png(GREEN, 3)
    pil = Image.open(io.BytesIO(shape_png(BLUE, 1)))
    forms = [
        "red.png",  # relative to the dataset file
        f"file://{tmp_path / 'data' / 'red.png'}",
        "data:image/png;base64," + base64.b64encode(blue).decode(),
        base64.b64encode(green).decode(),
    ]
    path = tmp_path / "data" / "rows.jsonl"
    path.write_text(json.dumps({"id": "forms", "output": "red blue green", "images": forms}) + "\n")
    judge = _judge(fresh_fake, tmp_path)
    result = ve.evaluate(str(path), evaluators=DESC, judge=judge)
    assert result.results["status"][0] == "processed", result.results["error"][0]
    mine = next(r for r in fresh_fake.requests if "red blue green" in r.text)  # not a late one from another test
    seen = [(i.label, i.colour, i.shapes) for i in mine.images]
    assert seen == [("Image 1", "red", 1), ("Image 2", "red", 1), ("Image 3", "blue", 2), ("Image 4", "green", 3)]
    fresh_fake.reset()
    python_rows = [
        {"id": "pil", "output": "blue", "images": [pil]},
        {"id": "bytes", "output": "blue", "images": [blue]},
        {"id": "hf", "output": "green", "images": [{"bytes": green, "path": None}]},  # an HF Image struct
    ]
    result = ve.evaluate(python_rows, evaluators=DESC, judge={**judge, "max_concurrency": 1})
    assert result.results["status"].to_list() == ["processed"] * 3, result.results["error"].to_list()
    assert sorted(i.colour for r in fresh_fake.requests for i in r.images) == ["blue", "blue", "green"]
    escape = tmp_path / "data" / "escape.jsonl"
    escape.write_text(json.dumps({"id": "e", "output": "x", "images": ["../outside.png"]}) + "\n")
    row = ve.evaluate(str(escape), evaluators=DESC, judge=judge).results.row(0, named=True)
    assert row["status"] == "error" and "escapes the dataset root" in row["error"]


def test_connection_refused_is_retried_then_an_error(image_dir, tmp_path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = {"model": "openai/gpt-4o-mini", "api_base": f"http://127.0.0.1:{port}/v1", "cache": False,
             "max_retries": 1}  # fmt: skip
    row = ve.evaluate(_rows(image_dir)[:1], evaluators=DESC, judge=judge).results.row(0, named=True)
    assert row["status"] == "error" and "connection error" in row["error"]
    assert json.loads(row["details"])["attempts"] == 2


def test_image_caps_are_checked_before_the_call(fresh_fake, tmp_path) -> None:
    (tmp_path / "a.png").write_bytes(shape_png(RED))
    (tmp_path / "b.png").write_bytes(shape_png(BLUE))
    rows = [{"id": "two", "output": "x", "images": [str(tmp_path / "a.png"), str(tmp_path / "b.png")]}]
    judge = _judge(fresh_fake, tmp_path, image={"max_images_per_call": 1})
    row = ve.evaluate(rows, evaluators=DESC, judge=judge).results.row(0, named=True)
    assert row["status"] == "error" and "max_images_per_call=1" in row["error"]
    judge = _judge(fresh_fake, tmp_path, image={"max_bytes_per_call": 500, "format": "png"})
    row = ve.evaluate(rows, evaluators=DESC, judge=judge).results.row(0, named=True)
    assert row["status"] == "error" and "max_bytes_per_call=500" in row["error"]
    assert fresh_fake.calls == 0
