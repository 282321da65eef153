"""Reply parsing: TOP_ISSUE / topIssue, normalization, fallback flagging, errors keep the reason."""

from __future__ import annotations

import pytest

from vision_eval.agents.replies import ReplyError, find_json_object, parse_reply

SEED_REPLY = """Here is my evaluation:
```json
{
  "score": 75,
  "TOP_ISSUE": {"problem": "Bottle label text is distorted", "severity": "Critical",
                "fix": "Ensure the label reads 'RESERVE 18'"},
  "categoryScores": {"brandAccuracy": 60, "composition": 85, "technicalQuality": "80"},
  "whatWorked": ["Lighting is dramatic", "Marble is realistic"],
  "promptInstructions": ["The bottle label must read RESERVE 18 in gold serif font"],
  "checklist": [{"item": "logo visible", "pass": true}, {"name": "label legible", "status": "fail", "notes": "warped"}],
  "feedback": "Mood is right, label is poor.",
}
```"""


def test_seed_reply() -> None:
    verdict = parse_reply(SEED_REPLY)
    assert verdict.score == 0.75 and verdict.raw_score == 75
    assert verdict.top_issue == {
        "problem": "Bottle label text is distorted",
        "severity": "critical",
        "fix": "Ensure the label reads 'RESERVE 18'",
    }
    assert verdict.category_scores == {"brandAccuracy": 0.6, "composition": 0.85, "technicalQuality": 0.8}
    assert verdict.what_worked == ["Lighting is dramatic", "Marble is realistic"]
    assert verdict.prompt_instructions == ["The bottle label must read RESERVE 18 in gold serif font"]
    assert verdict.checklist == [
        {"item": "logo visible", "passed": True, "notes": None},
        {"item": "label legible", "passed": False, "notes": "warped"},
    ]
    assert verdict.feedback == "Mood is right, label is poor."
    assert not verdict.parse_failed and verdict.warnings == []


def test_top_issue_camel_case_in_prose() -> None:
    text = 'Verdict {"score": 40, "topIssue": {"problem": "wrong colour", "severity": "major", "fix": "use red"}} ok'
    verdict = parse_reply(text)
    assert verdict.score == 0.4
    assert verdict.top_issue == {"problem": "wrong colour", "severity": "major", "fix": "use red"}


def test_bad_optional_fields_warn_but_keep_the_score() -> None:
    verdict = parse_reply(
        '{"score": 55, "TOP_ISSUE": {"problem": "p", "severity": "huge"}, "categoryScores": {"a": 140}}'
    )
    assert verdict.score == 0.55
    assert verdict.top_issue == {"problem": "p", "severity": None, "fix": None}
    assert verdict.category_scores == {}
    assert len(verdict.warnings) == 2


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I think it's a 7/10.", "no JSON object"),
        ('{"rating": 70}', "no 'score'"),
        ('{"score": 140}', "not a number from 0 to 100"),
        ('{"score": "great"}', "not a number from 0 to 100"),
    ],
)
def test_unparseable_reply_is_an_error_without_fallback(text: str, reason: str) -> None:
    with pytest.raises(ReplyError, match=reason):
        parse_reply(text)


def test_fallback_is_flagged() -> None:
    verdict = parse_reply("no json here", fallback_score=50)
    assert verdict.score == 0.5 and verdict.raw_score is None
    assert verdict.parse_failed is True
    assert "no JSON object" in verdict.warnings[0]


def test_score_as_text() -> None:
    assert parse_reply('{"score": "82/100"}').score == 0.82
    assert parse_reply('{"score": "64%"}').score == 0.64


def test_find_json_object_prefers_the_key() -> None:
    assert find_json_object('{"a": 1} then {"score": 2}', required_key="score") == {"score": 2}
    assert find_json_object("nothing") is None
    assert find_json_object('{"a": [1, 2,], // note\n "b": "}"}') == {"a": [1, 2], "b": "}"}
