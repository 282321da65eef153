"""The grading contracts as pure functions (promptfoo's documented reply meanings) and the reliability maths."""

from __future__ import annotations

import math

import pytest

from vision_eval.llm import reliability as rel
from vision_eval.llm.graders import (
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
    assert parse_steps('{"steps": ["a", " ", "b"]}') == ["a", "b"]
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
    [('{"category": "D", "reason": "conflict"}', "D"), ('{"category": "(b)", "reason": "x"}', "B"),
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
