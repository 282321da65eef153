"""Rules of the benchmark metrics not pinned by a reference fixture: exact_count's English number words and what an
unreadable row keeps in its details."""

from __future__ import annotations

import json
from typing import Any

import pytest

import vision_eval as ve
from vision_eval.evaluators.benchmarks import exact_count
from vision_eval.evaluators.benchmarks.exact_count import NO_COUNT, SEVERAL_COUNTS, numbers_in, score_lmms_eval
from vision_eval.evaluators.benchmarks.protocols import RAW_CHARS


def test_number_words_up_to_a_hundred() -> None:
    words = exact_count._number_words()  # the table NUMBER_WORDS is built from, once, at import
    units = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    assert [words[w] for w in units] == list(range(13))
    teens = ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
    assert [words[w] for w in teens] == list(range(13, 20))
    tens = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
    assert [words[w] for w in tens] == list(range(20, 100, 10))
    for t, tens_word in enumerate(tens):
        for u, unit in enumerate(units[1:10], start=1):
            assert words[f"{tens_word}-{unit}"] == words[f"{tens_word} {unit}"] == 20 + 10 * t + u
    extras = {"none": 0, "a dozen": 12, "dozen": 12, "hundred": 100, "a hundred": 100, "one hundred": 100}
    assert {w: words[w] for w in extras} == extras
    assert len(words) == 13 + 7 + 8 + 8 * 9 * 2 + len(extras)
    assert "twenty-zero" not in words and "twenty-ten" not in words


def test_numbers_in_reads_words_and_digits_in_order() -> None:
    text = "Twenty-one cats, twenty  two dogs, a dozen eggs, one hundred and 1,234.5 ants, ninety-nine"
    assert numbers_in(text) == [21.0, 22.0, 12.0, 100.0, 1234.5, 99.0]


@pytest.mark.parametrize("output", ["many", "x" * (RAW_CHARS + 50)])
def test_a_reference_without_a_count_keeps_the_reply_and_reference_cut_to_raw_chars(output: str) -> None:
    expected = "several" + "y" * RAW_CHARS
    row = score_lmms_eval(output, expected)
    assert (row.status, row.score, row.error) == ("error", None, "expected_output holds no count")
    assert json.loads(row.details or "") == {
        "protocol": "lmms_eval",
        "raw": output[:RAW_CHARS],
        "expected": expected[:RAW_CHARS],
    }


def lenient(metric: str, pairs: list[tuple[str, str]], **settings: Any) -> list[tuple[float, dict[str, Any]]]:
    """(score, details) of each (reply, reference) under ``metric``'s lenient protocol."""
    rows = [{"id": str(i), "output": o, "expected_output": e} for i, (o, e) in enumerate(pairs)]
    spec = {"type": metric, "protocol": "lenient", **settings}
    result = ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False})
    assert result.results["status"].to_list() == ["processed"] * len(pairs)
    return [(s, json.loads(d)) for s, d in zip(result.results["score"], result.results["details"])]


def test_lenient_relaxed_accuracy_reads_currency_percent_and_thousands() -> None:
    pairs = [
        ("$12.", "12"),  # a currency sign and a final period
        ("€12", "12"),
        ("12%", "0.12"),  # a percent reply against a fraction (exactly: the tolerance is 0)
        ("0.12", "12%"),
        ("12%.", "0.12"),
        ("1,000,000", "1000000"),  # thousands commas in overlapping groups
        ("ABC", "abc"),  # text: compared lowercased
        ("X12", "12"),  # anything else around a number makes it text
        ("12X", "12"),
        ("12X%", "12"),
        ("13", "12"),
    ]
    scored = lenient("relaxed_accuracy", pairs, tolerance=0.0)
    assert [s for s, _ in scored] == [1.0] * 7 + [0.0] * 4
    assert scored[2][1] == {
        "protocol": "lenient",
        "prediction": "12%",
        "prediction_number": 12.0,
        "answer": "0.12",
        "answer_number": 0.12,
        "numeric": True,
        "matched": "0.12",
    }
    assert scored[10][1]["matched"] is None and scored[7][1]["numeric"] is False


def test_lenient_relaxed_accuracy_tolerance_is_inclusive() -> None:
    scored = lenient("relaxed_accuracy", [("105", "100"), ("95", "100"), ("105.1", "100")])
    assert [s for s, _ in scored] == [1.0, 1.0, 0.0]


def test_lenient_vqa_normalization_of_whitespace_and_punctuation() -> None:
    pairs = [
        ("red\ncar", "red car"),
        ("red\rcar", "red car"),
        ("e-mail -x", "email x"),  # a mark touching a space anywhere: every such mark is deleted
        ("e-mail- x", "email x"),
        ("x-ray", "x ray"),  # else it becomes a space
        ("e-mail\t-x", "email x"),  # a tab or a new line is a space first: the mark touches a space
        ("e-mail\n-x", "email x"),
    ]
    assert [s for s, _ in lenient("vqa_accuracy", pairs)] == [1.0] * 7


def test_lenient_vqa_caps_each_subset_at_three_matches() -> None:
    answers = json.dumps(["2"] * 4 + ["3"] * 6)
    ((score, details),) = lenient("vqa_accuracy", [("two", answers)])
    assert score == 1.0 and (details["matches"], details["answers"]) == (4, 10)
    ((two, _),) = lenient("vqa_accuracy", [("two", json.dumps(["2"] * 2 + ["3"] * 8))])
    assert two == pytest.approx((2 * (1 / 3) + 8 * (2 / 3)) / 10)


def test_lenient_pope_reads_a_yes_or_no_anywhere_when_it_is_the_only_one() -> None:
    pairs = [("I would say yes", "yes"), ("I would say no", "no"), ("Yes, no doubt", "yes")]
    assert [s for s, _ in lenient("pope", pairs)] == [1.0, 1.0, 1.0]


def test_lenient_exact_count_rows_and_summary() -> None:
    rows = [("no numbers here", "3"), ("3 or 4", "3"), ("3", "3"), ("5", "3")]
    spec = {"type": "exact_count", "protocol": "lenient", "pick": "only"}
    data = [{"id": str(i), "output": o, "expected_output": e} for i, (o, e) in enumerate(rows)]
    result = ve.evaluate(data, evaluators={"m": spec}, run={"progress": False})
    assert result.results.select("status", "score", "details", "error").rows() == [
        ("error", None, '{"protocol":"lenient","raw":"no numbers here","expected":"3","found":[]}', NO_COUNT),
        ("error", None, '{"protocol":"lenient","raw":"3 or 4","expected":"3","found":[3.0,4.0]}', SEVERAL_COUNTS),
        ("processed", 1.0, '{"protocol":"lenient","predicted":3.0,"expected":3.0,"found":[3.0]}', None),
        ("processed", 0.0, '{"protocol":"lenient","predicted":5.0,"expected":3.0,"found":[5.0]}', None),
    ]
    metrics = result.run_info["metrics"]["m"]
    assert metrics == {"protocol": "lenient", "n": 2, "unparseable": 1, "accuracy": 0.5, "mae": 1.0}


def test_lenient_anls_similarity_in_double_precision_and_unreadable_answers() -> None:
    ((score, details),) = lenient("anls", [("abc", "abd")])
    assert score == details["similarity"] == 1 - 1 / 3 and details["closest"] == "abd"
    data = [{"id": "a", "output": "x", "expected_output": '["unclosed'}]  # no usable answer in the whole batch
    result = ve.evaluate(data, evaluators={"m": {"type": "anls", "protocol": "lenient"}}, run={"progress": False})
    assert result.results["status"].to_list() == ["error"]
    assert result.results["error"][0].startswith("reference answers look like a JSON list but do not parse")


# ---------------------------------------------------------------- what the details column says for letter presets


@pytest.mark.parametrize(
    ("output", "expected", "score", "details"),
    [
        ("The answer is B.", "b", 1.0, {"prediction": "B", "expected": "B"}),  # the gold letter in upper case
        ("nothing", "C", 0.0, {"prediction": None, "expected": "C", "unparseable": True}),
        ("  \n ", "C", 0.0, {"prediction": None, "expected": "C", "unparseable": True}),  # blank
        ("2 Cars.", "2 cars", 1.0, {"prediction": "2 cars", "expected": "2 cars"}),  # text: lower case, no period
        ("3 cars", "2 cars", 0.0, {"prediction": "3 cars", "expected": "2 cars"}),
    ],
)
def test_realworldqa_details_name_the_prediction_and_the_gold(
    output: str, expected: str, score: float, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.realworldqa import realworldqa_row

    row = realworldqa_row("lmms_eval", output, expected)
    assert (row.status, row.score) == ("processed", score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}


@pytest.mark.parametrize(
    ("output", "expected", "status", "score", "details"),
    [
        ("a", "0", "processed", 1.0, {"prediction": "a", "expected": "A"}),  # the reply as given
        ("B. y", "0", "processed", 0.0, {"prediction": "B", "expected": "A"}),
        ("", "0", "processed", 0.0, {"prediction": None, "expected": "A", "unparseable": True}),
        ("x", "5", "error", None, {}),  # no option 5: an error row that still names its protocol
        ("B.", "1", "processed", 1.0, {"prediction": "B", "expected": "B"}),  # "X." is X, however short
        ("B", "0", "processed", 0.0, {"prediction": "B", "expected": "A"}),  # another option's letter: read, wrong
        ("b", "0", "processed", 0.0, {"prediction": "b", "expected": "A"}),
        ("wood", "0", "processed", 0.0, {"prediction": "w", "expected": "A", "unparseable": True}),  # no letter
    ],
)
def test_scienceqa_details_name_the_prediction_the_gold_and_the_protocol(
    output: str, expected: str, status: str, score: float | None, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.scienceqa import scienceqa_row

    row = scienceqa_row("lmms_eval", output, expected, ["x", "y"])
    assert (row.status, row.score) == (status, score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}
    if status == "error":
        assert row.error == "expected_output is not the index of an option"


@pytest.mark.parametrize(
    ("output", "expected", "status", "score", "details"),
    [
        ("B. the sun", "1", "processed", 1.0, {"prediction": "b", "expected": "B"}),  # the leading letter
        ("b", "1", "processed", 1.0, {"prediction": "b", "expected": "B"}),
        ("C", "1", "processed", 0.0, {"prediction": "c", "expected": "B"}),
        ("sun", "1", "processed", 0.0, {"prediction": "sun", "expected": "B", "unparseable": True}),  # no letter
        ("x", "7", "error", None, {}),
    ],
)
def test_ai2d_details_name_the_prediction_the_gold_and_the_protocol(
    output: str, expected: str, status: str, score: float | None, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.ai2d import ai2d_row

    row = ai2d_row("lmms_eval", output, expected, ["moon", "sun", "star"])
    assert (row.status, row.score) == (status, score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}
    if status == "error":
        assert row.error == "expected_output is not the index of an option"


# ---------------------------------------------------------------- lmms-eval's shared letter reader (mcq_extract.py)


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("   ", ""),  # nothing to read
        ("so A or DX", "A"),  # only the marks , . ! ? ; : ' " are stripped from the ends, not letters
        ("The (A) is wrong, so D.", "D"),  # the final period stripped: D alone at the end beats a bracketed letter
        ("Pick (B), not C either", "B"),  # a bracketed letter beats one before a space
        ("x (A) (B) (A) y", "A"),  # two of one shape: the one whose last place is last
        ("x (A) (B) y", "B"),
        ("(B) is wrong: the answer is C here", "C"),  # after an answer phrase beats a bracketed letter
        ("answer is B then C, answer is B ok", "C"),  # after the first place of the phrase; each letter's first place
        ("so B or C; answer is C then B ok", "B"),  # ... counted from the phrase, not from the start
        ("answer is C then B then C ok", "B"),
        ("(B) is right, not A; the answer is clear", "B"),  # a phrase with no letter after it reads nothing
        ("so (C) or B; answer is hard", "C"),  # letters before the phrase are not after it
        ("A, not (B)", "A"),  # alone at the start beats every shape
        ("(B) or maybe A", "A"),  # alone at the end beats every shape but the start
    ],
)
def test_letter_reader_ranks_shapes_as_lmms_eval_extract_mcq_answer(reply: str, letter: str) -> None:
    """Each expected letter is what lmms-eval's ``extract_mcq_answer`` @75571cf returns for the reply (checked by
    running it); the cases set one shape against another."""
    from vision_eval.evaluators.benchmarks.choices import mcq_letter

    assert mcq_letter(reply, ["A", "B", "C", "D"]) == letter


# ---------------------------------------------------------------- MMMU and MMMU-Pro rows not in the parity fixtures


@pytest.mark.parametrize(("output", "score"), [("...", 0.0), (" . ", 0.0), ("x", 1.0), ("no idea.", 1.0)])
def test_mmmu_lmms_eval_open_answer_right_only_for_an_empty_gold_and_a_reply_that_reads(
    output: str, score: float
) -> None:
    """lmms-eval's mmmu_process_results keeps the first open prediction as text and eval_open iterates its
    characters: an empty gold ("" is in every character) is matched by any reply that is not empty once stripped of
    white space and periods ("..." parses to "", which has no character)."""
    from vision_eval.evaluators.benchmarks.mmmu import score_row

    assert score_row("lmms_eval", output, "", None, "open").score == score
    assert score_row("lmms_eval", output, "x", None, "open").score == 0.0


@pytest.mark.parametrize(
    ("output", "score", "details"),
    [
        (" B \n", 1.0, {"prediction": "B", "expected": "B"}),  # the stripped reply is the prediction
        ("Z", 0.0, {"prediction": "Z", "expected": "B"}),  # any capital letter is a read choice
        ("[", 0.0, {"prediction": "[", "expected": "B", "unparseable": True}),  # the character after Z is not
        ("(B)", 0.0, {"prediction": "(B)", "expected": "B", "unparseable": True}),  # only the letter itself is right
    ],
)
def test_mmmu_pro_vision_row_keeps_the_whole_reply(output: str, score: float, details: dict[str, Any]) -> None:
    from vision_eval.evaluators.benchmarks.mmmu_pro import vision_row

    row = vision_row("lmms_eval", output, "B")
    assert (row.status, row.score) == ("processed", score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}


def test_mmmu_pro_standard_row_names_its_protocol() -> None:
    from vision_eval.evaluators.benchmarks.mmmu_pro import standard_row

    row = standard_row("lmms_eval", " (C) \n", "C", "['a', 'b', 'c']")
    assert (row.status, row.score) == ("processed", 1.0)
    assert json.loads(row.details) == {"protocol": "lmms_eval", "prediction": "C", "expected": "C"}


def test_mmmu_pro_vision_setting_needs_no_options_column_and_standard_does() -> None:
    rows = [{"id": "a", "output": "B", "expected_output": "B", "subject": "Art"}]
    result = ve.evaluate(rows, evaluators={"m": {"type": "mmmu_pro", "setting": "vision"}}, run={"progress": False})
    assert result.results["score"].to_list() == [1.0]
    described = result.run_info["evaluators"]["m"]
    assert described["setting"] == "vision"
    assert described["unparseable_counted_as"] == (
        "a random choice (Python random seeded 0, simple_evaluate's default random_seed, replies in dataset order)"
    )
    with pytest.raises(ve.ConfigError, match="needs dataset column 'options'"):
        ve.evaluate(rows, evaluators={"m": {"type": "mmmu_pro"}}, run={"progress": False})


@pytest.mark.parametrize(("output", "expected", "score"), [("y = 3", "y", 0.0), ("y = 3", "3", 1.0)])
def test_mmmu_official_open_answer_after_an_equals_sign_in_the_last_line(
    output: str, expected: str, score: float
) -> None:
    """MMMU's get_key_subresponses: in the last line, the text after "=" is a key part (shorter than the whole), so
    "y = 3" predicts 3 (and not the text "y = 3", in which "y " would be found)."""
    from vision_eval.evaluators.benchmarks.mmmu import score_row

    assert score_row("official", output, expected, None, "open").score == score


def test_grouped_summary_from_the_results_alone() -> None:
    """A grouped metric summarised from its result rows only (no group inputs, e.g. a run whose batches handed none
    back): the accuracy over the processed rows, and no group."""
    import polars as pl

    from vision_eval.evaluator import EvalContext
    from vision_eval.stack import build_evaluator

    metric = build_evaluator("s", {"type": "scienceqa"}, EvalContext())
    assert metric.describe()["unparseable_counted_as"] == "wrong"  # lmms-eval's scienceqa draws nothing
    results = pl.DataFrame(
        {
            "sample_id": ["a", "b", "c", "d"],
            "status": ["processed", "processed", "processed", "error"],
            "score": [1.0, 0.0, 0.0, None],
            "details": [
                '{"protocol":"lmms_eval","prediction":"A","expected":"A"}',
                '{"protocol":"lmms_eval","prediction":"B","expected":"A"}',
                '{"protocol":"lmms_eval","prediction":null,"expected":"A","unparseable":true}',
                '{"protocol":"lmms_eval"}',
            ],
        }
    )
    assert metric.summarize(results) == {
        "protocol": "lmms_eval",
        "n": 3,
        "errors": 1,
        "unparseable": 1,
        "accuracy": 1 / 3,
        "subject": {},
    }


@pytest.mark.parametrize(
    ("protocol", "reply", "letter"),
    [
        ("official", "(A) or (B)", "B"),  # two bracketed letters: the one that comes last
        ("official", "A or B or A", "A"),  # two letters between spaces: the one whose last place is last
        ("lmms_eval", "(A) or (B)", "B"),
    ],
)
def test_mmmu_reads_the_last_of_several_letters(protocol: str, reply: str, letter: str) -> None:
    """MMMU's parse_multi_choice_response (and lmms-eval's copy): several candidates of one shape, the one with the
    greatest ``rfind``."""
    from vision_eval.evaluators.benchmarks.mmmu import read_choice

    assert read_choice(reply, ["x", "y"], protocol) == letter


def test_mmmu_rows_details_unread_open_and_bad_options() -> None:
    from vision_eval.evaluators.benchmarks.mmmu import score_row

    unread = score_row("official", "no idea", "A", "['x', 'y']", "multiple-choice")
    assert (unread.status, unread.score) == ("processed", 0.0)
    assert json.loads(unread.details) == {
        "protocol": "official",
        "question_type": "multiple-choice",
        "prediction": None,
        "expected": "A",
        "unparseable": True,
        "choices": ["A", "B"],
        "raw": "no idea",
    }
    open_row = score_row("lmms_eval", "3", "3", None, "open")
    assert (open_row.status, open_row.score) == ("processed", 0.0)  # every open question scores 0 under lmms_eval
    assert json.loads(open_row.details) == {"protocol": "lmms_eval", "question_type": "open", "expected": "3"}
    bad = score_row("official", "A", "A", "x, y", "multiple-choice")
    assert (bad.status, bad.score, bad.error) == ("error", None, "options are not a list of texts")
    assert json.loads(bad.details) == {"protocol": "official", "options": "x, y"}


# ---------------------------------------------------------------- MATH-Vision's reading of a reply (lmms-eval @75571cf)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("So the answer is \\boxed{\\frac12\\sqrt3}.", "\\frac{1}{2}\\sqrt{3}"),  # with a root, \frac12 is braced
        ("x = \\frac1{2}\\sqrt3", "\\frac{1}{2}\\sqrt{3}"),  # one brace missing
        ("\\sqrt3\\frac1", "\\sqrt{3}\\frac1"),  # a \frac with one character after: the text left as it is
        ("\\sqrt23", "\\sqrt{2}3"),  # one character under the root
        ("The area is .25", "0.25"),  # a leading period gets its zero
        ("Area \\approx 12.566 \\approx 12.57", "12.57"),  # the value after the last \approx
        ("x = 3.1 \\app rox 3", "3"),  # spaces go first, then the one \approx left splits
        ("1/2", "\\frac{1}{2}"),
        ("the answer is 0.5", "\\frac{1}{2}"),
        ("The answer is $\\frac{3}{4}$ m^3.", "\\frac{3}{4}"),  # dollars and the unit dropped
        ("The answer is (b).", "b"),
        ("", ""),
    ],
)
def test_mathvision_reads_the_answer_as_lmms_eval_does(reply: str, answer: str) -> None:
    """Each expected answer is what lmms-eval's mathvision_process_results (with eval_utils.find_math_answer) reads
    from the reply before comparing (checked by running the reference's functions)."""
    from vision_eval.evaluators.benchmarks.mathvision import read_answer

    assert read_answer(reply) == answer


@pytest.mark.parametrize(
    ("output", "expected", "options", "status", "score", "details"),
    [
        ("the answer is 2", "2", None, "processed", 1.0, {"prediction": "2", "expected": "2"}),  # no options: free
        ("The answer is 4.", "B", ["3", "4", "5"], "processed", 1.0, {"prediction": "4", "expected": "B"}),  # B's text
        ("The answer is 4.", "C", ["3", "4", "5"], "processed", 0.0, {"prediction": "4", "expected": "C"}),
        ("", "2", [], "processed", 0.0, {"prediction": "", "expected": "2", "unparseable": True}),
        ("4", "AB", ["3", "4", "5"], "error", None, {}),  # not one letter
        ("4", "D", ["3", "4", "5"], "error", None, {}),  # no fourth option
    ],
)
def test_mathvision_row_details_and_option_letters(
    output: str, expected: str, options: list[str] | None, status: str, score: float | None, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.mathvision import score_row

    row = score_row("lmms_eval", output, expected, options)
    assert (row.status, row.score) == (status, score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}
    if status == "error":
        assert row.error == "expected_output is not the letter of one of the options"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("\\floor{3.7}", 3),
        ("\\lfloor 3.7 \\rfloor", 3),
        ("\\binom{5}{0}", 1),
        ("\\binom{5}{-1}", 0),
        ("\\binom{2.5}{2}", 1.88),  # a falling factorial over k!
        ("\\binom{3000}{2}", 4498500),
        ("3>3", 0),
        ("4>3", 1),
        ("3<4", 1),
        ("\\tfrac{1}{2}", 0.5),
        ("\\dfrac{3}{4}", 0.75),
        ("\\sqrt[3]{8}", 2.0),
        ("\\log_{2}{8}", 3.0),
        ("2^3^2", 64),
        ("10\\%", 0.1),
        ("5_{2}+1", 5),  # a subscript on a number ends the parse
        ("2^{3}_{2}+1", 9),  # after a power, a subscript is passed over and the parse goes on
        ("2^3_2", 8),
        ("2^{3}_{a}*2", 16),
        ("2^{3}_{2}^{2}", 64),
        ("(2)^{3}_{2}+1", 9),
        ("0^2_x", 0),
        ("2^3_e", None),  # e is no atom of the grammar
        ("0^2_x_[2]", None),
        ("\\ceil{2.5}", None),
        ("|2|", None),
        ("1/0", None),
        ("1,5", None),
    ],
)
def test_latex_value_is_the_number_mathvision_compares(text: str, value: float | None) -> None:
    """Each value is the reference's ``round(eval(str(latex2sympy(text))), 2)`` (latex2sympy2 1.9.1 in eval_utils'
    namespace, as tests/fixtures/benchmarks/parity/make_parity_mathvision.py runs it)."""
    from vision_eval.evaluators.benchmarks.latex_value import latex_value

    got = latex_value(text)
    assert (None if got is None else round(got, 2)) == value


def test_per_group_lists_groups_in_the_given_order_then_by_first_appearance() -> None:
    import polars as pl

    from vision_eval.evaluators.benchmarks.grouped import per_group

    names = [f"g{(7 * i) % 101}" for i in range(101)]  # 101 groups, first seen in this order
    frame = pl.DataFrame({"group": names * 2 + [None], "score": [1.0] * 101 + [0.0] * 101 + [1.0]})
    table = per_group(frame, "group")
    assert list(table) == names
    assert table["g7"] == {"accuracy": 0.5, "n": 2}  # the null group is left out
    ordered = per_group(frame, "group", how="sum", name="right", order=["g3", "nothing", "g0"])
    assert list(ordered) == ["g3", "g0", *(n for n in names if n not in ("g3", "g0"))]
    assert ordered["g3"] == {"right": 1.0, "n": 2}


@pytest.mark.parametrize(
    ("output", "expected", "source", "status", "score", "details"),
    [
        (" The sign says \uff33\uff34\uff2f\uff30.\n", '["stop", "halt"]', "IIIT5K", "processed", 1.0,
         {"prediction": "the sign says stop.", "matched": "stop"}),  # fullwidth folded, lowercased, stripped
        ("go on", '["stop"]', "IIIT5K", "processed", 0.0, {"prediction": "go on", "matched": None}),
        ("x ^ 2", "x^2", "HME100k", "processed", 1.0, {"prediction": "x^2", "matched": "x^2"}),  # spaces dropped
        ("X^2", "x^2", "HME100k", "processed", 0.0, {"prediction": "X^2", "matched": None}),  # case kept
        ("stop", "[]", "IIIT5K", "error", None, {}),
    ],
)  # fmt: skip
def test_ocrbench_row_details_name_the_prediction_and_the_answer_found(
    output: str, expected: str, source: str, status: str, score: float | None, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.ocrbench import score_row

    row = score_row("lmms_eval", output, expected, source)
    assert (row.status, row.score) == (status, score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}
    if status == "error":
        assert row.error == "no reference answers in expected_output"


@pytest.mark.parametrize(
    ("output", "expected", "score", "details"),
    [
        ("The answer is (B).", " b ", 1.0, {"prediction": "B", "expected": "B"}),  # the gold stripped, upper case
        ("C", "B", 0.0, {"prediction": "C", "expected": "B"}),
        ("no idea", "B", 0.0, {"prediction": None, "expected": "B", "unparseable": True}),
    ],
)
def test_mmstar_details_name_the_letter_read_and_the_gold(
    output: str, expected: str, score: float, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.mmstar import score_row

    row = score_row("lmms_eval", output, expected)
    assert (row.status, row.score) == ("processed", score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}


@pytest.mark.parametrize(
    ("output", "expected", "score", "details"),
    [
        (" b) the dog", "B", 1.0, {"prediction": "b", "expected": "B"}),  # the first character, any case
        ("D", "B", 0.0, {"prediction": "D", "expected": "B"}),
        ("c. a cat", "B", 0.0, {"prediction": "c", "expected": "B"}),  # C is a choice, read in any case
        ("The dog", "B", 0.0, {"prediction": "T", "expected": "B", "unparseable": True}),
    ],
)
def test_seedbench_details_name_the_first_character_and_the_gold(
    output: str, expected: str, score: float, details: dict[str, Any]
) -> None:
    from vision_eval.evaluators.benchmarks.seedbench import seedbench_row

    row = seedbench_row("lmms_eval", output, expected)
    assert (row.status, row.score) == ("processed", score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}


@pytest.mark.parametrize(
    ("output", "expected", "status", "score", "details"),
    [
        ("Yes, it is.", "Yes", "processed", 1.0, {"prediction": "yes", "expected": "yes"}),  # "yes" in the first 4
        ("N", "no.", "processed", 1.0, {"prediction": "no", "expected": "no"}),  # one letter: y or n
        ("maybe", "no", "processed", 0.0, {"prediction": "other", "expected": "no", "unparseable": True}),
        ("yes", "perhaps", "error", None, {"expected": "perhaps"}),  # the gold kept for the reader
    ],
)
def test_mme_row_details(output: str, expected: str, status: str, score: float | None, details: dict[str, Any]) -> None:
    """lmms-eval's mme parse_pred_ans (Otter's): lowercased, periods dropped; yes/no, y/n, or yes/no in the first
    four characters, else "other"."""
    from vision_eval.evaluators.benchmarks.mme import score_row

    row = score_row("lmms_eval", output, expected)
    assert (row.status, row.score) == (status, score)
    assert json.loads(row.details) == {"protocol": "lmms_eval", **details}
    assert row.error == (None if status == "processed" else "expected_output is not yes or no")


def test_relaxed_accuracy_row_names_what_was_compared() -> None:
    """ChartQA's relaxed accuracy: a number within 5% of a non-zero label, else the same lowercased text."""
    from vision_eval.evaluators.benchmarks.relaxed_accuracy import score_row

    row = score_row("official", "answers", 0.05, "105", '["Yes", "100"]')
    assert (row.status, row.score) == ("processed", 1.0)
    assert json.loads(row.details) == {
        "protocol": "official",
        "prediction": "105",
        "prediction_number": 105.0,
        "answer": "100",
        "answer_number": 100.0,
        "numeric": True,
        "matched": "100",
    }
    wrong = score_row("official", "answers", 0.05, "No", '["yes"]')
    assert (wrong.status, wrong.score) == ("processed", 0.0)
    assert json.loads(wrong.details)["matched"] is None


def run_one(metric: dict[str, Any], output: str, expected: str) -> ve.EvalResult:
    rows = [{"id": "0", "output": output, "expected_output": expected}]
    return ve.evaluate(rows, evaluators={"m": metric}, run={"progress": False})


def test_a_one_row_summary_counts_its_row() -> None:
    pope = run_one({"type": "pope", "protocol": "official"}, "Yes, there is.", "yes").run_info["metrics"]["m"]
    assert (pope["n"], pope["tp"], pope["accuracy"], pope["unparseable"]) == (1, 1, 1.0, 0)
    count = run_one({"type": "exact_count", "protocol": "lmms_eval"}, "many", "3").run_info["metrics"]["m"]
    assert count["unparseable"] == 1  # lmms-eval reads no number in "many"


@pytest.mark.parametrize(("protocol", "comparable"), [("official", True), ("lmms_eval", True), ("lenient", False)])
def test_only_a_reference_protocol_is_comparable(protocol: str, comparable: bool) -> None:
    described = run_one({"type": "anls", "protocol": protocol}, "x", "x").run_info["evaluators"]["m"]
    assert (described["protocol"], described["comparable"]) == (protocol, comparable)


def test_anls_rows_name_their_answers_column() -> None:
    from vision_eval.evaluators.benchmarks.anls import score_row

    row = score_row("official", "answers", 0.5, "Paris", '["paris"]')
    assert (row.status, row.score) == ("processed", 1.0)
    result = run_one({"type": "anls", "protocol": "official"}, "x", "[]")
    assert result.results["error"].to_list() == ["no reference answers in expected_output"]


# ---------------------------------------------------------------- judged benchmarks: comparable with the reference


@pytest.mark.parametrize(
    ("judge", "other"),
    [
        ({"judge": {"model": "openai/gpt-4o-2024-11-20"}}, None),  # the provider prefix aside, the reference's judge
        ({"judge": {"model": "gpt-4o-2024-11-20"}}, None),
        ({"judge": {"model": "openrouter/openai/gpt-4o-2024-11-20"}}, None),  # the model is the id's last part
        ({"judge": {"model": "openai/gpt-4o-mini"}}, "openai/gpt-4o-mini"),
        ({"judge": {"model": "openai/x-gpt-4o-2024-11-20"}}, "openai/x-gpt-4o-2024-11-20"),
        ({"panel": ["openai/gpt-4o-2024-11-20", "azure/gpt-4o-2024-11-20"]},
         "openai/gpt-4o-2024-11-20, azure/gpt-4o-2024-11-20"),  # two judges, even both the reference's
    ],
)  # fmt: skip
def test_a_judged_benchmark_is_comparable_only_with_the_reference_judge_alone(
    judge: dict[str, Any], other: str | None
) -> None:
    from vision_eval.evaluator import EvalContext
    from vision_eval.stack import build_evaluator

    reasons = [f"judge {other} is not the reference's gpt-4o-2024-11-20"] if other else []
    metric = build_evaluator("m", {"type": "mmvet", "protocol": "lmms_eval", **judge}, EvalContext())
    described = metric.describe()
    assert (described["protocol"], described["reference_judge"]) == ("lmms_eval", "gpt-4o-2024-11-20")
    assert described["protocol_source"] == metric.protocols["lmms_eval"]
    assert described["comparable"] is (not reasons)
    assert described.get("not_comparable_because") == (reasons or None)


def test_a_judged_benchmark_without_a_judge_is_not_comparable() -> None:
    from vision_eval.evaluator import EvalContext
    from vision_eval.stack import build_evaluator

    metric = build_evaluator("m", {"type": "mmvet", "protocol": "lmms_eval"}, EvalContext())
    assert metric.comparable_reasons() == ["no judge model"]


def test_mmvet_summary_per_capability_and_integration() -> None:
    """MM-Vet's numbers (lmms-eval tasks/mmvet/utils.py): the mean score, per capability a question's ``capability``
    text contains, and per integration of exactly those capabilities; error rows left out."""
    import polars as pl

    from vision_eval.evaluator import EvalContext
    from vision_eval.evaluators.benchmarks.grouped import GROUPS
    from vision_eval.stack import build_evaluator

    metric = build_evaluator("m", {"type": "mmvet", "protocol": "lmms_eval"}, EvalContext())
    results = pl.DataFrame(
        {
            "sample_id": ["a", "b", "c", "d"],
            "status": ["processed", "processed", "processed", "error"],
            "score": [1.0, 0.5, 0.0, None],
            "cached": [False] * 4,
            "details": ["{}"] * 4,
        }
    )
    groups = pl.DataFrame({"sample_id": ["a", "b", "c", "d"], "capability": ["rec,ocr", "ocr", "rec,know,gen", "ocr"]})
    summary = metric.summarize_from(results, {GROUPS: groups.lazy()})
    assert {k: summary[k] for k in ("protocol", "n", "errors", "Total")} == {
        "protocol": "lmms_eval",
        "n": 3,
        "errors": 1,
        "Total": 0.5,
    }
    assert summary["capabilities"] == {
        "rec": {"score": 0.5, "n": 2},
        "ocr": {"score": 0.75, "n": 2},
        "know": {"score": 0.0, "n": 1},
        "gen": {"score": 0.0, "n": 1},
    }
    assert summary["capability_integrations"] == {
        "rec_gen_know": {"score": 0.0, "n": 1},
        "ocr": {"score": 0.5, "n": 1},
        "rec_ocr": {"score": 1.0, "n": 1},
    }
    without = metric.summarize_from(results, {})  # no group inputs: no capability known
    assert (without["Total"], without["capabilities"], without["capability_integrations"]) == (0.5, {}, {})


def test_mathvista_rules_read_every_fixture_reply_as_lmms_eval_does() -> None:
    """The rules of MathVista's reading, case for case against the parity fixture (lmms-eval's own outputs,
    tests/fixtures/benchmarks/parity/make_judged_parity.py): the quick extraction (or ``None`` where the reference
    asked its judge), the normalisation of the extraction and the comparison with the answer."""
    import gzip
    from pathlib import Path

    from vision_eval.evaluators.benchmarks.mathvista import normalize, quick_extraction, same_answer

    path = Path(__file__).parent / "fixtures" / "benchmarks" / "parity" / "mathvista.json.gz"
    cases = json.loads(gzip.decompress(path.read_bytes()))["cases"]
    wrong = []
    for case in cases:
        choices = [str(c) for c in case["choices"] or []]
        kinds = (case["question_type"], case["answer_type"])
        quick = quick_extraction(case["reply"].strip(), *kinds, choices)
        prediction = normalize(case["extraction"], choices, *kinds, case["precision"])
        right = same_answer(case["prediction"], case["answer"])
        expected = (None if case["asked_judge"] else case["extraction"], case["prediction"], case["true_false"])
        if (quick, prediction, right) != expected:
            wrong.append((case["pid"], (quick, prediction, right), expected))
    assert len(cases) >= 3000 and sum(case["asked_judge"] for case in cases) > 1000
    assert wrong == []


def test_mmbench_rules_agree_with_lmms_eval() -> None:
    """MMBench's rule reading of each parity fixture reply (a named letter, else one option's text) is lmms-eval's
    (tests/test_judged_parity.py's ``mmbench_agreement``: the fixture's ``read``, made by lmms-eval's own code)."""
    from test_judged_parity import mmbench_agreement

    total, agreeing, wrong = mmbench_agreement()
    assert total >= 3000
    assert agreeing == total, wrong[:5]


def test_mmbench_options_present_are_the_non_null_ones_as_text() -> None:
    from vision_eval.evaluators.benchmarks.mmbench import present_options

    row = {"A": 1.5, "B": float("nan"), "C": None, "D": 2}  # a numeric option column holds floats (NaN: none)
    assert present_options(row) == {"A": "1.5", "D": "2"}
