"""Rules of the benchmark metrics not pinned by a reference fixture: exact_count's English number words and what an
unreadable row keeps in its details."""

from __future__ import annotations

import json

import pytest

from vision_eval.evaluators.benchmarks import exact_count
from vision_eval.evaluators.benchmarks.exact_count import numbers_in, score_lmms_eval
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
