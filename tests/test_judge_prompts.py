"""Templates (sandbox, StrictUndefined, label placement), judge files and the shared reply parser."""

from __future__ import annotations

import base64
import json

import pytest
from conftest import BLUE, RED, shape_png
from jinja2.exceptions import SecurityError, UndefinedError

from vision_eval.config import ImagePolicy
from vision_eval.images.policy import PreparedImage, prepare_image
from vision_eval.llm.judges import ReplyError, load_judge, parse_verdict
from vision_eval.llm.replies import find_json_object
from vision_eval.llm.requests import build_call
from vision_eval.llm.templates import BASE64_REMOVED, render_parts, template_variables

EXPECTED = {
    "image-description": {"visual_accuracy": 0.40, "completeness": 0.30, "clarity": 0.20, "relevance": 0.10},
    "activity": {"activity_identification": 0.35, "accuracy": 0.35, "detail_level": 0.20, "inference_quality": 0.10},
    "comparison": {"change_detection": 0.40, "spatial_precision": 0.25, "completeness": 0.20, "clarity": 0.15},
    "reasoning": {
        "logical_correctness": 0.40,
        "visual_understanding": 0.30,
        "problem_solving": 0.20,
        "explanation": 0.10,
    },
    "structured-output": {
        "json_validity": 0.30,
        "schema_compliance": 0.35,
        "data_accuracy": 0.25,
        "completeness": 0.10,
    },
    "quality-assessment": {
        "technical_completeness": 0.30,
        "compositional_analysis": 0.25,
        "aesthetic_evaluation": 0.20,
        "overall_judgment": 0.15,
        "professional_tone": 0.10,
    },
}


def _images(*colours: tuple[int, int, int]) -> list[PreparedImage]:
    return [
        prepare_image(shape_png(c), ImagePolicy(format="png"), label=f"Image {i}") for i, c in enumerate(colours, 1)
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_six_judge_files_declare_the_seed_dimensions(name: str) -> None:
    spec = load_judge(f"{name}-judge")
    assert spec.dimensions == EXPECTED[name]
    assert list(spec.dimensions) == list(EXPECTED[name])  # order kept for the response format
    assert spec.threshold == 0.7 and spec.scale == (0.0, 1.0)
    assert load_judge(name).path == spec.path
    assert {"output", "response_format"} <= template_variables(spec.body)


def test_detail_lists_named_per_judge() -> None:
    assert load_judge("image-description").details == ("hallucinations", "missing_elements")
    assert "detected_changes" in load_judge("comparison").details


def test_labels_in_text_pixels_after_them_in_template_order() -> None:
    red, blue = _images(RED, BLUE)
    template = "Compare {{ image_references[1] }} with {{ image_reference }}. Again {{ image_reference }}."
    parts = render_parts(template, {}, [red, blue])
    assert parts == ["Compare Image 2", blue, " with Image 1", red, ". Again Image 1", "."]


def test_image_references_render_as_a_list_and_unreferenced_images_are_appended() -> None:
    red, blue = _images(RED, BLUE)
    assert render_parts("All: {{ image_references }}", {}, [red, blue]) == ["All: Image 1", red, ", Image 2", blue]
    assert render_parts("no refs", {}, [red]) == ["no refs", "\n\nImage 1:\n", red]


def test_strict_undefined_and_sandbox() -> None:
    with pytest.raises(UndefinedError):
        render_parts("{{ missing_column }}", {}, [])
    with pytest.raises(SecurityError):
        render_parts("{{ output.__class__.__mro__[1].__subclasses__() }}", {"output": "x"}, [])


def test_base64_never_enters_the_text_channel() -> None:
    payload = base64.b64encode(shape_png(RED) * 3).decode()
    call = build_call("Output: {{ output }}", {"output": f"see data:image/png;base64,{payload}"}, _images(RED))
    text_parts = [p["text"] for p in call.messages[0]["content"] if p["type"] == "text"]
    assert all(payload[:100] not in t for t in text_parts)
    assert BASE64_REMOVED in call.text
    assert [p["type"] for p in call.messages[0]["content"]] == ["text", "image_url"]


def test_plan_counts_images_and_tokens() -> None:
    call = build_call("{{ image_reference }} {{ output }}", {"output": "abcd" * 25}, _images(RED, BLUE))
    plan = call.plan(None)
    assert plan["image_count"] == 2 and [i["size"] for i in plan["images"]] == [[96, 64], [96, 64]]
    # hand-checked: small images cost 85 + 170*1 = 255 tokens each; text "Image 1 " + 100 chars + appended label
    text_tokens = -(-len(call.text) // 4)
    assert plan["estimated_input_tokens"] == 2 * 255 + text_tokens


SPEC = load_judge("image-description")
GOOD = {"visual_accuracy": 1.0, "completeness": 0.5, "clarity": 0.5, "relevance": 0.0}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"scores": GOOD, "reasoning": "ok"}),
        "```json\n" + json.dumps({"scores": GOOD, "reasoning": "ok"}) + "\n```",
        "Sure! Here it is: " + json.dumps({"scores": GOOD, "reasoning": "ok", "overall": 0.99}) + " Hope it helps.",
        'Draft {"note": 1} then {"scores": ' + json.dumps(GOOD) + ', "reasoning": "ok",}',
    ],
)
def test_parser_accepts_fenced_prose_and_lenient_json(reply: str) -> None:
    verdict = parse_verdict(reply, SPEC)
    # hand-checked: 0.4*1 + 0.3*0.5 + 0.2*0.5 + 0.1*0 = 0.65
    assert verdict.score == pytest.approx(0.65)
    assert verdict.scores == GOOD


def test_judge_total_is_kept_not_trusted() -> None:
    verdict = parse_verdict(json.dumps({"scores": GOOD, "overall": 0.99, "details": {"hallucinations": ["cat"]}}), SPEC)
    assert verdict.judge_total == 0.99 and verdict.score == pytest.approx(0.65)
    assert verdict.details == {"hallucinations": ["cat"]}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I think it is good.", "no JSON"),
        (json.dumps({"scores": {k: v for k, v in GOOD.items() if k != "clarity"}}), "misses dimension 'clarity'"),
        (json.dumps({"scores": {**GOOD, "clarity": 1.5}}), "outside 0..1"),
        (json.dumps({"scores": {**GOOD, "clarity": "high"}}), "not a number"),
        (json.dumps({"verdict": "good"}), "no 'scores'"),
    ],
)
def test_parser_errors_are_explicit(reply: str, reason: str) -> None:
    with pytest.raises(ReplyError, match=reason):
        parse_verdict(reply, SPEC)


def test_weights_override_and_scale(tmp_path) -> None:
    spec = SPEC.with_weights({"relevance": 0.6})
    assert spec.dimensions["relevance"] == 0.6 and spec.dimensions["visual_accuracy"] == 0.4
    with pytest.raises(ValueError, match="sum to zero"):
        SPEC.with_weights(dict.fromkeys(GOOD, 0))
    with pytest.raises(ValueError, match="unknown dimension"):
        SPEC.with_weights({"nope": 1})
    custom = tmp_path / "stars-judge.md"
    custom.write_text("---\ndimensions: {stars: 1}\nscale: [1, 5]\nthreshold: 0.5\n---\nRate {{ output }}\n")
    stars = load_judge(str(custom))
    assert parse_verdict('{"scores": {"stars": 4}}', stars).score == pytest.approx(0.75)


def test_find_json_object_prefers_required_key() -> None:
    assert find_json_object('{"a": 1} {"scores": {}}', "scores") == {"scores": {}}
    assert find_json_object("nothing") is None
    assert find_json_object('{"a": 1, // note\n "b": [1,2,],}') == {"a": 1, "b": [1, 2]}
