"""Every fast path gives, on every generated row, the verdict of its row-wise definition (the shared harness in
``tests/equivalence.py``): the benchmark metrics' column functions against their row-wise definitions, and
field_accuracy's extraction engines against ``matching.evaluate_row``. (The code validators have one implementation
each, their row functions: ``tests/test_code_validators.py``.)"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.evaluators.benchmarks import anls as _anls
from vision_eval.evaluators.benchmarks import counts as _counts
from vision_eval.evaluators.benchmarks import relaxed as _relaxed
from vision_eval.evaluators.benchmarks import vqa_answers as _vqa_answers
from vision_eval.evaluators.benchmarks import yes_no as _yes_no
from vision_eval.rowwise import RowResult


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Calls of the definition ``module.name`` from the fast path (the rows it handed over), counted."""
    calls = [0]
    definition = getattr(module, name)

    def counting(*args: Any) -> RowResult:
        calls[0] += 1
        return definition(*args)

    monkeypatch.setattr(module, name, counting)
    return calls


# benchmark metrics -------------------------------------------------------------------------------------------------

ANSWER_PIECES = [
    *["yes", "Yes", "YES", "no", "No.", "not", "nope", "Yes, it is.", "no, ", " yes ", "y", "n", "1", "one", "two"],
    *["3.5", "1,000", "12%", "$12", "-0", "0.0", "1e3", "nan", "inf", "Infinity", "٣", "３", "a", "an", "the", "it's"],
    *[
        "won't",
        "Dr.",
        "3.14.",
        "...",
        "  ",
        "\t",
        "\n",
        "\x1c",
        "\xa0",
        "\u2028",
        "İ",
        "ß",
        "K",
        "ΑΣ",
        "é",
        "\u0301",  # a combining mark, "²" an other number, "‿" connector punctuation, "\u200d" a joiner: word
        "²",  # characters to only one of Python's re and Polars' regex
        "‿",
        "\u200d",
        "ก\u0e34",
        "!",
        "?",
        ",",
    ],
]


def answers(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(ANSWER_PIECES) + rng.choice(["", " ", ""]) for _ in range(rng.randint(0, 5)))
        for _ in range(n)
    ]


TEXT_METRICS: list[tuple[Callable[[str], Any], Callable[[pl.Series], Any]]] = [
    (_vqa_answers.official_answer, _vqa_answers.official_answers),
    (_vqa_answers.evalai_answer, _vqa_answers.evalai_answers),
    (_vqa_answers.process_punctuation, _vqa_answers.official_punctuations),
    (_relaxed.python_float, _relaxed.python_floats),
    (_yes_no.lmms_eval_reading, _yes_no.lmms_eval_readings),
    (_yes_no.official_reading, lambda s: list(_yes_no.official_readings(s).iter_rows())),
]


@pytest.mark.parametrize("definition, columns", TEXT_METRICS, ids=lambda f: getattr(f, "__name__", "columns"))
def test_benchmark_text_metrics_are_their_definitions(definition: Callable[[str], Any], columns: Any) -> None:
    texts = answers(3000, 13)
    got = columns(pl.Series(texts, dtype=pl.Utf8))
    got = got.to_list() if isinstance(got, pl.Series) else got
    for text, fast in zip(texts, got, strict=True):
        want = definition(text)
        assert fast == want or (fast != fast and want != want), f"{text!r}: {fast!r} != {want!r}"  # NaN is NaN


def test_benchmark_lenient_yes_no_reading_is_its_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = answers(3000, 13)
    definition = [_yes_no.lenient_reading(t) for t in texts]
    calls = counted(monkeypatch, _yes_no, "lenient_reading")
    assert _yes_no.lenient_readings(pl.Series(texts)).to_list() == definition
    assert 0 < calls[0] < len(texts) / 10  # the rows where the regex engines' \b may differ, and only those


def test_benchmark_lenient_yes_no_hands_over_where_word_boundaries_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    # "İ" lowercases to "i" + U+0307 (a combining mark: a word character to Polars only); "²" is one to Python only.
    differing = ["noanİNo.", "no\u0301", "\u0301yes", "yes²", "²no", "yes, no\u0301 doubt"]
    texts = [*differing, "ΑΣ yes", "yes ก\u0e34", "yes", None]
    definition = [None if t is None else _yes_no.lenient_reading(t) for t in texts]
    calls = counted(monkeypatch, _yes_no, "lenient_reading")
    assert _yes_no.lenient_readings(pl.Series(texts, dtype=pl.Utf8)).to_list() == definition
    assert definition[: len(differing)] == ["no", "no", "yes", None, "no", "yes"]
    assert calls[0] == len(differing)


@pytest.mark.parametrize("pick", ["first", "last", "only"])
@pytest.mark.parametrize("references", ["texts", "bare"])
def test_benchmark_lenient_count_is_its_definition(
    pick: _counts.Pick, references: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """exact_count's lenient protocol: every row's numbers, answer, expected count and error are those of
    ``lenient_count``; the rows Polars may read otherwise (other scripts, odd spaces) are handed to it."""
    pairs = [(o or "", e or "") for o, e in eq.count_pairs(3000, 5)]
    if references == "bare":  # every reference a plain number: the column path skips reading them
        pairs = [(o, f"{i % 13}" if i % 3 else f"{i % 7}.5") for i, (o, _) in enumerate(pairs)]
    definition = [_counts.lenient_count(o, e, pick) for o, e in pairs]
    handed = counted(monkeypatch, _counts, "lenient_count")
    outputs, expected = (pl.Series([p[k] for p in pairs], dtype=pl.Utf8) for k in (0, 1))
    fast = _counts.lenient_counts(outputs, expected, pick)
    for given, row, want in zip(pairs, fast.iter_rows(), definition, strict=True):
        assert row == (want.found, want.predicted, want.expected, want.error), given
    assert 0 < handed[0] < len(pairs) / 2
    assert {w.error for w in definition} >= {None, _counts.NO_COUNT} and any(
        w.predicted == w.expected for w in definition
    )


def test_benchmark_pair_metrics_are_their_definitions() -> None:
    texts = answers(3000, 14)
    pairs = pl.DataFrame({"output": texts, "gold": texts[1:] + texts[:1]})
    equal = _relaxed.lower_equal(pairs["output"], pairs["gold"]).to_list()
    assert equal == [a.lower() == b.lower() for a, b in zip(pairs["output"], pairs["gold"], strict=True)]
    relaxed = _relaxed.relaxed_pairs(pairs.with_columns(p=_relaxed.python_floats(pairs["output"])), 0.05)
    definition = [float(_relaxed.relaxed_correct(a, b)) for a, b in zip(pairs["output"], pairs["gold"], strict=True)]
    assert relaxed["score"].to_list() == definition
    with_rows = pairs.with_columns(**_anls.official_row_columns())
    distances = _anls.official_distances(with_rows).to_list()
    assert distances == [_anls.official_distance(a, b) for a, b in zip(pairs["output"], pairs["gold"], strict=True)]
