"""The grading contracts as pure functions (promptfoo's documented reply meanings) and the reliability maths."""

from __future__ import annotations

import math

import pytest

from vision_eval.grading import reliability as rel
from vision_eval.grading.parsers import (
    GraderError,
    parse_closed_qa,
    parse_factuality,
    parse_faithfulness,
    parse_geval,
    parse_recall,
    parse_rubric,
    parse_select_best,
    parse_statements,
    parse_steps,
    weighted_score,
    yaml_objects,
)


@pytest.mark.parametrize(
    ("reply", "passed", "score"),
    [
        ('{"reason": "ok", "pass": true, "score": 0.3}', True, 0.3),
        ('{"reason": "no pass key"}', True, 1.0),
        ('{"pass": false}', False, 0.0),
        ('{"pass": "yes"}', True, 1.0),
        ('{"pass": "Y", "score": "0.25"}', True, 0.25),
        ('{"pass": "nope", "score": 0.9}', False, 0.9),
        ('{"pass": "false"}', False, 0.0),
        ('{"pass": true, "score": "high"}', True, 1.0),
        ('{"pass": false, "score": null}', False, 0.0),
        ('Sure.\n```json\n{\n  // my verdict\n  "pass": true,\n  "score": 0.7,\n}\n```', True, 0.7),
        ('I think {"reason": "a {brace} in text", "pass": true, "score": 1} and {"pass": false}', True, 1.0),
    ],
)
def test_rubric_contract(reply: str, passed: bool, score: float) -> None:
    verdict = parse_rubric(reply)
    assert (verdict.passed, verdict.score) == (passed, pytest.approx(score))


def test_rubric_without_json_is_a_grader_error() -> None:
    with pytest.raises(GraderError, match="no JSON"):
        parse_rubric("The output passes.")


def test_geval_contract() -> None:
    assert parse_steps('{"steps": ["a", " b "]}') == ["a", "b"]
    assert parse_geval('```json\n{"score": 7, "reason": "fine"}\n```') == (7.0, "fine")
    for bad, message in [('{"score": 11, "reason": "x"}', "outside"), ('{"score": -1, "reason": "x"}', "outside"),
                         ('{"score": 5, "reason": "  "}', "blank"), ('{"score": 5}', "blank"),
                         ('{"score": "x", "reason": "r"}', "not a number"), ("7", "no JSON")]:  # fmt: skip
        with pytest.raises(GraderError, match=message):
            parse_geval(bad)
    with pytest.raises(GraderError):
        parse_steps('{"steps": []}')


def _lp(tokens: list[str], top: dict[str, float], at: str) -> list[dict]:
    return [{"token": t, "logprob": 0.0, "top_logprobs": [{"token": k, "logprob": v} for k, v in top.items()]
             if t == at else [{"token": t, "logprob": 0.0}]} for t in tokens]  # fmt: skip


def test_logprob_weighting_at_the_score_token() -> None:
    # p(7) = 0.6, p(8) = 0.3, p(x) = 0.1 (not a score) -> renormalised over 7 and 8: (7*.6 + 8*.3) / .9
    tokens = ['{"', "reason", '":', ' "', "7", " apples", '",', ' "', "score", '":', " ", "7", "}"]
    top = {"7": math.log(0.6), "8": math.log(0.3), "x": math.log(0.1)}
    value, dist = weighted_score(_lp(tokens, top, "7"))  # type: ignore[misc]
    assert value == pytest.approx((7 * 0.6 + 8 * 0.3) / 0.9)
    assert dist == pytest.approx({"7": 0.6 / 0.9, "8": 0.3 / 0.9})
    assert weighted_score(_lp(['{"', "reason", '":', " 7"], top, "7")) is None  # a digit not after "score":
    assert weighted_score(None) is None


@pytest.mark.parametrize(
    ("reply", "category"),
    [('{"category": "D", "reason": "conflict"}', "D"), ('{"category": " b ", "reason": "x"}', "B"),
     ("(A) The submitted answer is a subset", "A"), ("My answer: (E) because", "E"), ("c) same", "C")],
)  # fmt: skip
def test_factuality_contract(reply: str, category: str) -> None:
    assert parse_factuality(reply)[0] == category


def test_factuality_errors() -> None:
    with pytest.raises(GraderError, match="not one of"):
        parse_factuality('{"category": "F", "reason": "x"}')
    with pytest.raises(GraderError, match="no category"):
        parse_factuality("I cannot decide.")


def test_closed_qa_contract() -> None:
    assert parse_closed_qa("It names red.\nY\nY  \n") is True
    assert parse_closed_qa("Missing blue.\nN\nN") is False
    for bad in ("Yes", "Y.", "y", ""):
        with pytest.raises(GraderError):
            parse_closed_qa(bad)


def test_context_contracts() -> None:
    assert parse_recall("1. a. So [Attributed]\n2. b. So [Not attributed]\n3. c [attributed]") == (2, 3)
    with pytest.raises(GraderError):
        parse_recall("all good")
    assert parse_statements("1. a\n\n2. b\n") == ["1. a", "2. b"]
    assert parse_faithfulness("x. Final verdict for each statement in order: Yes. No. No.", 3) == (2, 3)
    assert parse_faithfulness("1. ... Verdict: No\n2. ... Verdict: Yes", 2) == (1, 2)
    with pytest.raises(GraderError):
        parse_faithfulness("they look fine", 2)
    assert parse_select_best(" The best is 1, not 0.", 2) == 1
    for bad in ("none", "3"):
        with pytest.raises(GraderError):
            parse_select_best(bad, 3)


def test_aggregation_rules() -> None:
    assert rel.aggregate([0.2, 0.5, 0.8], [True, True, False], "mean", 0.7, True) == (pytest.approx(0.5), False)
    assert rel.aggregate([0.2, 0.5, 0.8], [True, True, False], "mean", None, False) == (pytest.approx(0.5), True)
    assert rel.aggregate([0.2, 0.9, 0.8], [False, True, True], "median", 0.7, True) == (0.8, True)
    assert rel.aggregate([0.2, 0.9, 0.8, 0.1], [False, True, True, False], "majority", 0.7, True) == (0.5, False)
    assert rel.aggregate([0.4], [True], "mean", 0.7, True) == (0.4, True)  # one judgement is kept as is
    assert rel.spread([0.2, 0.5, 0.8]) == pytest.approx({"std": math.sqrt(0.06), "min": 0.2, "max": 0.8})


def test_krippendorff_alpha_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12 units with gaps.
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = list(zip(a, b, c, d, strict=True))
    assert rel.krippendorff_alpha(units, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert rel.krippendorff_alpha(units, "interval") == pytest.approx(0.849, abs=5e-4)


def test_krippendorff_alpha_small_cases() -> None:
    # values 1,2 | 3,3: Do = 2/4, De = 22/12 -> 1 - 0.5 / (22/12) = 8/11
    assert rel.krippendorff_alpha([[1, 2], [3, 3]]) == pytest.approx(8 / 11)
    assert rel.krippendorff_alpha([[0.2, 0.2], [0.9, 0.9], [0.5, None]]) == pytest.approx(1.0)
    assert rel.krippendorff_alpha([[1, 1], [1, 1]]) is None  # no variation: undefined
    assert rel.krippendorff_alpha([[1, None]]) is None


def test_weighted_kappa_hand_checked() -> None:
    a, b = [0, 1, 2, 2], [0, 2, 2, 1]
    assert rel.weighted_kappa(a, b, 3, "linear") == pytest.approx(3 / 7)
    assert rel.weighted_kappa(a, b, 3, "quadratic") == pytest.approx(7 / 11)
    assert rel.weighted_kappa([0, 1, 1, 0], [0, 1, 1, 0], 2, "none") == pytest.approx(1.0)
    assert rel.weighted_kappa([1, 1], [1, 1], 2) is None
    assert rel.to_levels([1, 2.4, 5], 1, 5, 5) == [0, 1, 4]
    assert rel.default_levels((1, 5)) == 5 and rel.default_levels((0, 1)) == 5 and rel.default_levels((0, 10)) == 11


def test_correlations_hand_checked() -> None:
    out = rel.correlations([0.1, 0.4, 0.35, 0.8], [1, 2, 3, 4])
    assert out["spearman"] == pytest.approx(0.8)  # 1 - 6*2 / (4*15)
    assert out["kendall"] == pytest.approx(4 / 6)  # 5 concordant, 1 discordant pair
    assert rel.correlations([0.5, 0.5], [1, 2])["spearman"] is None
    assert [rel.label(v) for v in (True, "PASS", "no", 1, 0.0, "maybe", 3)] == [True, True, False, True, False,
                                                                                  None, None]  # fmt: skip


# ---------------------------------------------------------------- promptfoo 0.123.1, case for case (issue 19)


@pytest.mark.parametrize(
    ("reply", "passed", "score"),
    [
        ('{"pass": null, "score": 0.8}', True, 0.8),  # pass ?? true
        ('{"pass": " yes"}', False, 0.0),  # /^(true|yes|pass|y)$/i on the unstripped text
        ("{'reason': 'looks right', 'pass': True, 'score': 0.75}", True, 0.75),  # a Python dict, read as YAML
        ("{'pass': None, 'score': 0.4}", False, 0.4),  # YAML reads None as the string "None"
        ("Verdict: {'pass': False, 'reason': \"it's wrong\"}", False, 0.0),
        ({"pass": True, "score": 0.9, "reason": "an object, not text"}, True, 0.9),
    ],
)
def test_rubric_replies_read_as_promptfoo_reads_them(reply: object, passed: bool, score: float) -> None:
    verdict = parse_rubric(reply)
    assert (verdict.passed, verdict.score) == (passed, pytest.approx(score))


@pytest.mark.parametrize(
    ("reply", "objects"),
    [  # what promptfoo 0.123.1's extractJsonObjects returned for these replies (js-yaml 5.4.1)
        ("{'pass': True, 'x': None, 'y': 1e5, 'z': 017}", [{"pass": True, "x": "None", "y": 100000, "z": 17}]),
        ('{"reason": "see http://x.y/z", "pass": true}', [{"reason": "see http://x.y/z", "pass": True}]),
        ("{'x': 'a // b', 'y': 1} // trailing", [{"x": "a // b", "y": 1}]),
        ('{\n  // my verdict\n  "pass": true,\n  "score": 0.7,\n}', [{"pass": True, "score": 0.7}]),
        ("{pass: true, score: 0.9}", [{"pass": True, "score": 0.9}]),
        ('{"pass": yes}', [{"pass": "yes"}]),
        ('{"a": "unclosed {", "pass": true}', []),
        ('{"a": 1', [{"a": 1}]),  # closing braces are added when the reply ends first
        ('text { not yaml: [ } more {"ok": 1}', [{"ok": 1}]),
        ("{'s': 'don''t'}", [{"s": "don't"}]),
        ('prefix {"a": {"b": [1, 2, {"c": 3}]}} and {"d": 4}', [{"a": {"b": [1, 2, {"c": 3}]}}, {"d": 4}]),
    ],
)
def test_brace_spans_read_as_promptfoo_reads_them(reply: str, objects: list[dict]) -> None:
    assert yaml_objects(reply) == objects


def test_a_reply_that_is_not_text_is_a_grader_error_except_for_the_rubric() -> None:
    for parse in (parse_factuality, parse_closed_qa, parse_recall, parse_statements, parse_steps, parse_geval):
        with pytest.raises(GraderError, match="replied with an object, not text"):
            parse({"category": "A", "steps": ["x"], "score": 5, "reason": "r"})  # type: ignore[operator]
    with pytest.raises(GraderError, match="an array"):
        parse_rubric([{"pass": True}])
    with pytest.raises(GraderError, match="a number"):
        parse_select_best(1, 2)


def test_factuality_category_must_be_one_letter() -> None:
    for reply in ('{"category": "(B)", "reason": "x"}', '{"category": "B)"}', '{"category": "AB"}'):
        with pytest.raises(GraderError, match="is not one of A-E"):
            parse_factuality(reply)
    assert parse_factuality("{'category': 'b', 'reason': 'a superset'}") == ("B", "a superset")
    assert parse_factuality('{"category": 2, "reason": "x"} (D) they disagree')[0] == "D"  # not a string: legacy


def test_geval_steps_must_be_non_blank_strings() -> None:
    for reply in ('{"steps": ["a", 1]}', '{"steps": ["a", {"b": 2}]}', '{"steps": ["a", " "]}', '{"steps": [null]}'):
        with pytest.raises(GraderError, match="non-blank strings"):
            parse_steps(reply)


def test_recall_counts_lines_that_carry_a_mark() -> None:
    reply = (
        "1. Two circles [Attributed] [Attributed]\n2. Red. [NOT ATTRIBUTED]\nnotes\n3. x [Attributed] [Not Attributed]"
    )
    assert parse_recall(reply) == (1, 3)
    with pytest.raises(GraderError):
        parse_recall("1. Two circles. So [ Attributed ]")  # promptfoo's tokens, spelt exactly (any case)


def test_faithfulness_statements_without_a_verdict_are_unsupported() -> None:
    assert parse_faithfulness("Final verdict for each statement in order: Yes.", 3) == (2, 1)
    assert parse_faithfulness("1. Verdict: Yes\n2. Verdict: No", 4) == (3, 2)
    assert parse_faithfulness("Final verdict for each statement in order: Yes. Yes. No. No.", 3) == (2, 4)
    with pytest.raises(GraderError, match="neither yes nor no"):
        parse_faithfulness("Final verdict for each statement in order: Yes. Maybe.", 2)
