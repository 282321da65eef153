"""``judge_agents`` end to end through ``vision_eval.evaluate`` and the fake provider servers.

The fake answers as a pixel-grounded judge (``judge_from_pixels``): it reads the agent's name from the
system prompt, the brief from the prompt text and the dominant colour / shape count from the decoded
image, so a score can only come out right when the image arrived as pixels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, GREEN, RED, shape_png
from interrupting import interrupter

import vision_eval as ve
from vision_eval.errors import ConfigError
from vision_eval.testing.fake_providers import COLOURS, Action, FakeProviders, FakeRequest


def fenced(body: dict[str, Any]) -> str:
    return "Verdict:\n```json\n" + json.dumps(body) + "\n```"


def judge_from_pixels(request: FakeRequest) -> str:
    """brand: 90 when the image's colour is named in the brief, else 30; tech: always 60;
    count: 60 + 5 per shape in the image; own: its own format with ``topIssue``."""
    agent = re.search(r"AGENT=(\w+)", request.text).group(1)  # type: ignore[union-attr]
    brief = request.text.split("## Brief\n", 1)[1].split("\n\n", 1)[0].lower()
    wanted = [c for c in COLOURS if re.search(rf"\b{c}\b", brief)]
    image = request.images[0]
    if agent == "brand":
        match = image.colour in wanted
        score = 90 if match else 30
        issue = {"problem": f"the can is {image.colour}", "severity": "minor" if match else "major",
                 "fix": f"make the can {wanted[0] if wanted else 'on brand'}"}  # fmt: skip
        return fenced({"score": score, "TOP_ISSUE": issue, "categoryScores": {"colour": score, "logo": 80},
                       "promptInstructions": [f"The can is {wanted[0]}", "Keep a white background"],
                       "whatWorked": ["clean layout"], "feedback": f"I see a {image.colour} shape."})  # fmt: skip
    if agent == "tech":
        issue = {"problem": "blurry edges", "severity": "critical", "fix": "render sharp edges"}
        return fenced(
            {"score": 60, "TOP_ISSUE": issue, "promptInstructions": ["keep a WHITE  background", "Sharp edges"]}
        )
    if agent == "count":
        return fenced({"score": 60 + 5 * image.shapes, "TOP_ISSUE": {"problem": f"{image.shapes} shapes",
                       "severity": "moderate", "fix": "add shapes"}})  # fmt: skip
    if agent == "own":
        return '{"score": 70, "topIssue": {"problem": "tilted", "severity": "MINOR", "fix": "level it"}}'
    return "no idea"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviders]:
    with FakeProviders(responder=judge_from_pixels) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeProviders, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeProviders:
    monkeypatch.setenv("VISION_EVAL_CACHE_DIR", str(tmp_path / "doc-cache"))
    server.reset()
    return server


def judge(fake: FakeProviders, tmp_path: Path) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "sk-test",
            "cache_dir": str(tmp_path / "cache")}  # fmt: skip


BRAND = {"name": "brand", "system_prompt": "AGENT=brand. You check brand colours.", "scoring_weight": 80,
         "optimization_weight": 90, "evaluation_categories": ["colour", "logo"]}  # fmt: skip
TECH = {"name": "tech", "system_prompt": "AGENT=tech. You check technical quality.", "scoring_weight": 20,
        "optimization_weight": 30}  # fmt: skip


def panel(*agents: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {"p": {"type": "judge_agents", "agents": list(agents), **settings}}


def image(tmp_path: Path, name: str, colour: tuple[int, int, int], shapes: int = 1) -> str:
    path = tmp_path / f"{name}.png"
    path.write_bytes(shape_png(colour, shapes))
    return str(path)


def two_rows(tmp_path: Path) -> list[dict[str, Any]]:
    brief = "One red can on a white background."
    return [
        {"id": "red", "brief": brief, "prompt": "a red can", "images": [image(tmp_path, "r", RED)]},
        {"id": "blue", "brief": brief, "prompt": "a red can", "images": [image(tmp_path, "b", BLUE)]},
    ]


def test_weighted_panel_scores_from_pixels(fake: FakeProviders, tmp_path: Path) -> None:
    result = ve.evaluate(two_rows(tmp_path), evaluators=panel(BRAND, TECH), judge=judge(fake, tmp_path))
    rows = {r["sample_id"]: r for r in result.results.to_dicts()}
    # red matches the brief: (90*80 + 60*20) / 100 = 84; blue does not: (30*80 + 60*20) / 100 = 36
    assert rows["red"]["score"] == pytest.approx(0.84) and rows["red"]["passed"] is True
    assert rows["blue"]["score"] == pytest.approx(0.36) and rows["blue"]["passed"] is False
    dims = {(d["sample_id"], d["dimension"]): (d["score"], d["weight"]) for d in result.dimensions.to_dicts()}
    assert dims[("red", "brand")] == (pytest.approx(0.9), 80) and dims[("red", "tech")] == (pytest.approx(0.6), 20)
    assert dims[("blue", "brand/colour")] == (pytest.approx(0.3), None)
    assert dims[("blue", "brand/logo")][0] == pytest.approx(0.8)
    # every agent saw the row's image as pixels, with the agents' temperature (0.3)
    assert fake.calls == 4
    seen = sorted((re.search(r"AGENT=(\w+)", r.text).group(1), r.images[0].colour) for r in fake.requests)  # type: ignore[union-attr]
    assert seen == [("brand", "blue"), ("brand", "red"), ("tech", "blue"), ("tech", "red")]
    assert {r.body["temperature"] for r in fake.requests} == {0.3}
    assert all(len(r.images) == 1 and r.images[0].label == "Image 1" for r in fake.requests)
    details = json.loads(rows["blue"]["details"])
    assert details["agents"]["brand"]["top_issue"] == {"problem": "the can is blue", "severity": "major",
                                                       "fix": "make the can red"}  # fmt: skip
    assert details["agents"]["brand"]["feedback"] == "I see a blue shape."
    assert details["images"][0]["size"] == [96, 64] and details["weights"] == {"brand": 80, "tech": 20}
    assert rows["red"]["input_tokens"] > 2 * 255 and rows["red"]["cost_usd"] > 0
    metrics = result.run_info["metrics"]["p"]
    assert metrics["scheduler"]["calls"] == 4 and metrics["parse_failed"] == 0
    # no brief_id / iteration columns: one group, one ranking
    assert metrics["groups"] == {"all": {"last_iteration": None, "winner": "red", "winner_score": pytest.approx(0.84)}}
    assert result.tables["rankings"].select("sample_id", "rank").rows() == [("red", 1), ("blue", 2)]
    assert "plateaus" not in result.tables


def test_output_format_rule_and_system_prompt_reach_the_model(fake: FakeProviders, tmp_path: Path) -> None:
    own = {"name": "own", "system_prompt": 'AGENT=own.\nOUTPUT FORMAT: {"score": n, "topIssue": {...}}'}
    result = ve.evaluate(two_rows(tmp_path)[:1], evaluators=panel(BRAND, own), judge=judge(fake, tmp_path))
    by_agent = {re.search(r"AGENT=(\w+)", r.text).group(1): r for r in fake.requests}  # type: ignore[union-attr]
    for name, agent in (("brand", BRAND), ("own", own)):
        system = by_agent[name].body["messages"][0]
        assert system == {"role": "system", "content": agent["system_prompt"]}
    assert "## Response Format" in by_agent["brand"].text and "## Response Format" not in by_agent["own"].text
    assert "## Evaluation Categories" in by_agent["brand"].text
    # topIssue is accepted like TOP_ISSUE, severity normalized
    details = json.loads(result.results["details"][0])
    assert details["agents"]["own"]["top_issue"] == {"problem": "tilted", "severity": "minor", "fix": "level it"}
    assert result.results["score"][0] == pytest.approx((90 * 80 + 70 * 50) / 130 / 100)


@pytest.mark.parametrize("key", ["TOP_ISSUE", "topIssue"])
def test_canned_reply_issue_keys(fake: FakeProviders, tmp_path: Path, key: str) -> None:
    fake.push(Action(reply=json.dumps({"score": "64/100", key: {"problem": "p", "severity": "critical", "fix": "f"}})))
    result = ve.evaluate(two_rows(tmp_path)[:1], evaluators=panel(BRAND), judge=judge(fake, tmp_path))
    assert result.results["score"][0] == pytest.approx(0.64)
    issue = json.loads(result.results["details"][0])["agents"]["brand"]["top_issue"]
    assert issue == {"problem": "p", "severity": "critical", "fix": "f"}


def test_unparseable_reply_fallback_is_flagged(fake: FakeProviders, tmp_path: Path) -> None:
    rows = two_rows(tmp_path)[:1]
    fake.push(Action(reply="I would rather not say."))
    strict = ve.evaluate(rows, evaluators=panel(BRAND), judge=judge(fake, tmp_path))
    assert strict.results["status"][0] == "error" and "unparseable reply" in strict.results["error"][0]
    assert json.loads(strict.results["details"][0])["agents"]["brand"]["raw"] == "I would rather not say."
    fake.push(Action(reply="Still nothing."))
    relaxed = ve.evaluate(
        rows, evaluators=panel(BRAND, fallback_score=50), judge={**judge(fake, tmp_path), "cache": False}
    )
    row = relaxed.results.to_dicts()[0]
    assert row["status"] == "processed" and row["score"] == pytest.approx(0.5)
    details = json.loads(row["details"])
    assert details["parse_failed"] is True and details["agents"]["brand"]["parse_failed"] is True
    assert details["agents"]["brand"]["raw"] == "Still nothing."
    assert relaxed.run_info["metrics"]["p"]["parse_failed"] == 1


def test_call_and_image_failures_become_row_errors(fake: FakeProviders, tmp_path: Path) -> None:
    rows = two_rows(tmp_path)[:1]
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not an image at all")
    rows.append({"id": "broken", "brief": "A red can.", "images": [str(bad)]})
    fake.push(Action(status=400))  # not retryable: the agent fails on the first row
    result = ve.evaluate(rows, evaluators=panel(BRAND), judge=judge(fake, tmp_path))
    first, broken = result.results.sort("sample_id", descending=True).to_dicts()
    assert first["status"] == "error" and "brand: judge call failed after 1 attempt(s)" in first["error"]
    assert broken["status"] == "error" and fake.calls == 1  # the broken image never reached the model
    assert broken["error"].startswith("brand: Image 1: not a PNG/JPEG/GIF/WEBP image")
    assert json.loads(broken["details"])["agents"]["brand"]["error"].startswith("Image 1: not a PNG")


def test_braces_in_a_brief_are_text(fake: FakeProviders, tmp_path: Path) -> None:
    rows = [{"id": "x", "brief": "A red can, label {{ brand }} and {% raw %}", "images": [image(tmp_path, "r", RED)]}]
    result = ve.evaluate(rows, evaluators=panel(BRAND), judge=judge(fake, tmp_path))
    assert result.results["status"][0] == "processed"
    assert "label {{ brand }} and {% raw %}" in fake.requests[0].text


def test_retrieved_chunks_are_sent_and_recorded(fake: FakeProviders, tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\n## Colour\nThe can is ACME red.\n\n## Sun\nA small yellow sun sits top right.\n")
    rows = [{"id": "x", "brief": "A red can", "prompt": "red can, yellow sun", "images": [image(tmp_path, "r", RED)]}]
    chunks = {}
    for threshold in (0.99, 0.0):
        agent = {**BRAND, "documents": [str(guide)], "rag": {"similarity_threshold": threshold}}
        result = ve.evaluate(rows, evaluators=panel(agent), judge={**judge(fake, tmp_path), "cache": False})
        details = json.loads(result.results["details"][0])
        chunks[threshold] = [c["section"] for c in details["agents"]["brand"]["chunks"]]
        assert all(c["document"] == "guide.md" for c in details["agents"]["brand"]["chunks"])
    assert len(chunks[0.99]) == 1 and sorted(chunks[0.0]) == ["Colour", "Sun"]
    sent = fake.requests[-1].text.split("## Reference Guidelines", 1)[1]
    assert "The can is ACME red." in sent and "yellow sun sits top right" in sent


def iterations(tmp_path: Path) -> list[dict[str, Any]]:
    """Two briefs x 4 iterations; b1's best image stops gaining shapes after iteration 2, b2 keeps gaining."""
    shapes = {"b1": [(1, 2), (3, 1), (3, 2), (3, 3)], "b2": [(1, 1), (2, 1), (3, 2), (4, 1)]}
    rows = []
    for brief_id, per_iteration in shapes.items():
        for iteration, counts in enumerate(per_iteration, start=1):
            for candidate, count in zip("ab", counts, strict=True):
                name = f"{brief_id}-it{iteration}-{candidate}"
                rows.append({"id": name, "brief_id": brief_id, "brief": "Green circles.", "iteration": iteration,
                             "max_iterations": 4, "images": [image(tmp_path, name, GREEN, count)]})  # fmt: skip
    return rows


COUNT = {"name": "count", "system_prompt": "AGENT=count.", "scoring_weight": 50, "optimization_weight": 10}
TECH_FEEDBACK = {**TECH, "optimization_weight": 5}


def test_rankings_plateaus_and_feedback_written(fake: FakeProviders, tmp_path: Path) -> None:
    out = tmp_path / "run"
    evaluators = panel(COUNT, TECH_FEEDBACK)
    result = ve.evaluate(iterations(tmp_path), evaluators=evaluators, judge=judge(fake, tmp_path), output_dir=out)
    for name in ("rankings", "plateaus", "feedback"):
        assert (out / f"{name}.parquet").is_file()
    ranked = pl.read_parquet(out / "rankings.parquet")
    b1 = ranked.filter(pl.col("brief_id") == "b1").sort("iteration", "rank")
    # count scores 60 + 5 x shapes, tech 60: aggregate = (s*50 + 60*20) / 70
    agg = {n: ((60 + 5 * n) * 50 + 60 * 20) / 70 / 100 for n in range(1, 5)}
    assert b1.filter(pl.col("iteration") == 1).select("sample_id", "rank", "winner").rows() == [
        ("b1-it1-b", 1, True), ("b1-it1-a", 2, False)]  # fmt: skip
    assert b1.filter(pl.col("winner"))["score"].to_list() == pytest.approx([agg[2], agg[3], agg[3], agg[3]])
    plateaus = {r["brief_id"]: r for r in pl.read_parquet(out / "plateaus.parquet").to_dicts()}
    # b1 best: 2, 3, 3, 3 shapes -> the window of iterations 2..4 gains 0 < 0.02: plateau at 2, seen at 4
    assert (plateaus["b1"]["plateaued"], plateaus["b1"]["plateau_iteration"], plateaus["b1"]["detected_at"]) == (
        True, 2, 4)  # fmt: skip
    assert plateaus["b2"]["plateaued"] is False  # 1, 2, 3, 4 shapes: +5/70 per iteration
    feedback = pl.read_parquet(out / "feedback.parquet").filter(pl.col("brief_id") == "b2", pl.col("iteration") == 4)
    issues = feedback["top_issues"][0]
    assert [(i["agent"], i["severity"], i["sample_id"]) for i in issues] == [
        ("tech", "critical", "b2-it4-a"), ("count", "moderate", "b2-it4-a")]  # fmt: skip
    assert feedback["prompt_instructions"][0].to_list() == ["keep a WHITE  background", "Sharp edges"]
    groups = result.run_info["metrics"]["p"]["groups"]
    assert groups["b1"]["winner"] == "b1-it4-a"  # a tie on 3 shapes: broken by sample id
    assert groups["b2"]["last_iteration"] == 4 and groups["b2"]["winner_score"] == pytest.approx(agg[4])
    assert groups["b1"]["plateaued"] is True and groups["b1"]["plateau_iteration"] == 2
    assert result.run_info["metrics"]["p"]["plateaued_groups"] == 1
    assert set(result.tables) >= {"rankings", "plateaus", "feedback"}


def test_feedback_orders_by_severity_then_optimization_weight(fake: FakeProviders, tmp_path: Path) -> None:
    rows = [
        {"id": "x", "brief_id": "b", "iteration": 1, "brief": "One red can.", "images": [image(tmp_path, "b", BLUE)]}
    ]
    result = ve.evaluate(rows, evaluators=panel(BRAND, TECH, COUNT), judge=judge(fake, tmp_path))
    feedback = result.tables["feedback"].to_dicts()[0]
    # tech critical, brand major (blue is off-brief), count moderate; instructions de-duplicated ignoring case/spaces
    assert [i["agent"] for i in feedback["top_issues"]] == ["tech", "brand", "count"]
    assert feedback["prompt_instructions"] == ["keep a WHITE  background", "Sharp edges", "The can is red"]


def test_batches_give_the_same_tables_as_one_batch(fake: FakeProviders, tmp_path: Path) -> None:
    rows = iterations(tmp_path)
    evaluators = panel(COUNT, TECH_FEEDBACK)
    whole = ve.evaluate(rows, evaluators=evaluators, judge=judge(fake, tmp_path))
    split = ve.evaluate(rows, evaluators=evaluators, judge=judge(fake, tmp_path), run={"batch_size": 3})
    metrics = split.run_info["metrics"]["p"]  # the same requests: the cache answered every call of every row
    assert metrics["cache_hits"] == 16 and metrics["scheduler"]["cache_hits"] == 32
    for name in ("rankings", "plateaus", "feedback"):
        assert split.tables[name].equals(whole.tables[name]), name
    assert split.tables["rankings"].height == 16 and split.tables["plateaus"].height == 2


def test_without_judge_rows_are_skipped_with_plans(fake: FakeProviders, tmp_path: Path) -> None:
    guide = tmp_path / "guide.txt"
    guide.write_text("Cans are red.\n\nBackgrounds are white.")
    agents = ({**BRAND, "documents": [str(guide)]}, TECH)
    result = ve.evaluate(two_rows(tmp_path), evaluators=panel(*agents))
    assert result.results["status"].to_list() == ["skipped", "skipped"] and fake.calls == 0
    details = json.loads(result.results["details"][0])
    assert "judge.model is null" in details["reason"]
    brand = details["agents"]["brand"]
    assert brand["system"] == BRAND["system_prompt"] and brand["temperature"] == 0.3
    assert [c["document"] for c in brand["chunks"]] == ["guide.txt"]
    request = brand["request"]
    assert request["image_count"] == 1 and "Cans are red." in request["text"]
    assert request["estimated_input_tokens"] == 255 + -(-len(BRAND["system_prompt"] + request["text"]) // 4)
    assert details["agents"]["tech"]["chunks"] == []
    metrics = result.run_info["metrics"]["p"]
    assert metrics["planned_calls"] == 4 and "rankings" not in result.tables


def test_config_errors(tmp_path: Path) -> None:
    rows = two_rows(tmp_path)
    with pytest.raises(ConfigError, match="scoring_weight"):
        ve.evaluate(rows, evaluators=panel({**BRAND, "scoring_weight": 120}))
    with pytest.raises(ConfigError, match="colour"):
        ve.evaluate(rows, evaluators=panel({**BRAND, "colour": "red"}))
    with pytest.raises(ConfigError, match="have no judge model"):
        ve.evaluate(rows, evaluators=panel(BRAND, {**TECH, "judge": {"model": "openai/gpt-4o-mini"}}))
    with pytest.raises(ConfigError, match="unknown agent"):
        ve.evaluate(rows, evaluators=panel("no_such_agent"))


def test_embedding_failure_fails_that_agent_not_the_run(fake: FakeProviders, tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("Cans are red.")
    agent = {**BRAND, "documents": [str(guide)], "rag": {"embedding_model": "openai/text-embedding-3-small"}}
    rows = two_rows(tmp_path)  # the fake serves no embeddings endpoint
    result = ve.evaluate(rows, evaluators=panel(agent, TECH, require_all_agents=False), judge=judge(fake, tmp_path))
    assert result.results["status"].to_list() == ["processed", "processed"]
    assert result.results["score"].to_list() == pytest.approx([0.6, 0.6])  # tech alone
    details = json.loads(result.results["details"][0])
    assert "embedding the documents failed" in details["agents"]["brand"]["error"]
    assert fake.calls == 2  # only tech was asked


def test_resumed_run_rebuilds_the_same_tables_without_calls(fake: FakeProviders, tmp_path: Path) -> None:
    """Interrupted after its first batch, the resumed run sends no call that had finished (the cache is off: the
    run's journal answers them) and its run-wide tables equal those of an uninterrupted run."""
    from vision_eval.llm.cache import CallCache

    rows, out = iterations(tmp_path), tmp_path / "run"
    uncached = {**judge(fake, tmp_path), "cache": False}
    clean = ve.evaluate(rows, evaluators=panel(COUNT, TECH_FEEDBACK), judge=uncached, run={"batch_size": 3})
    needed = fake.calls
    evaluators = {**panel(COUNT, TECH_FEEDBACK), "stop": interrupter(out, "p", 1, tmp_path / "stopped")}
    with pytest.raises(KeyboardInterrupt):
        ve.evaluate(rows, evaluators=evaluators, judge=uncached, run={"batch_size": 3}, output_dir=out)
    journaled = len(CallCache(out / "checkpoint"))
    again = ve.evaluate(rows, evaluators=evaluators, judge=uncached, run={"batch_size": 3, "resume": str(out)})
    assert again.run_info["resumed_batches"]["p"] >= 1 and journaled >= 3
    sent = again.run_info["scheduler"]  # this run's own count (the shared fake also sees the interrupted run's)
    # None re-sent: a journaled call comes back with its batch's saved part (one part per data batch) or from the
    # journal, never from the provider, so this run sends at most the calls the journal did not have.
    assert sent["calls"] <= needed - journaled
    for name in ("rankings", "plateaus", "feedback"):
        assert again.tables[name].drop("evaluator").equals(clean.tables[name].drop("evaluator")), name
