"""The plain-Python Levenshtein similarity equals rapidfuzz's to the last bit, and field_accuracy scores alike either
way."""

from __future__ import annotations

import random

import polars as pl
from rapidfuzz.distance import Levenshtein

from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings
from vision_eval.structured import levenshtein
from vision_eval.structured.matching import FieldSpec, evaluate_row

ALPHABET = "abcAB xyz\u00e9\u00fc\u4e2d\U0001f600\ud800"


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 14)))


def test_equals_rapidfuzz_on_random_pairs() -> None:
    rng = random.Random(7)
    pairs = [(_text(rng), _text(rng)) for _ in range(5000)]
    pairs += [("", ""), ("a", ""), ("", "abc"), ("kitten", "sitting"), ("Acme Corp", "Acme Crop"), ("ab", "ba")]
    pairs += [(a, a[: len(a) // 2] + "q" + a[len(a) // 2 :]) for a, _ in pairs[:500]]  # a shared prefix and suffix
    for a, b in pairs:
        assert levenshtein.normalized_similarity(a, b) == Levenshtein.normalized_similarity(a, b), (a, b)
        assert levenshtein.distance(a, b) == Levenshtein.distance(a, b), (a, b)


def test_cells_count_only_different_pairs() -> None:
    assert levenshtein.cells([("abc", "abc"), ("ab", "xyz"), ("", "q")]) == 6


def _scores(names: list[str], rows: int, seed: int) -> tuple[list[object], list[object]]:
    rng = random.Random(seed)
    outputs = [f'{{"v": "{rng.choice(names)}"}}' for _ in range(rows)]
    expected = [f'{{"v": "{rng.choice(names)}"}}' for _ in range(rows)]
    spec = {"path": "v", "match": "fuzzy", "threshold": 0.85}
    evaluator = FieldAccuracy("f", FieldAccuracySettings(fields=[spec]), EvalContext())
    frame = pl.DataFrame({"id": [str(i) for i in range(rows)], "output": outputs, "expected_output": expected})
    got = evaluator.evaluate(frame).results["score"].to_list()
    want = [evaluate_row([FieldSpec(**spec)], o, e, "weighted_average").get("score") for o, e in zip(outputs, expected)]
    return got, want


def test_few_pairs_in_python_and_many_by_rapidfuzz_score_as_the_reference() -> None:
    few = ["Acme Corp", "Acme Crop", "Globex", "Glbex", "  ACME  corp ", ""]
    got, want = _scores(few, 200, 1)  # a handful of distinct pairs: plain Python
    assert got == want
    many = [f"name {i} " * 20 for i in range(30)] + [f"nome {i} " * 20 for i in range(30)]
    assert levenshtein.cells([(a, b) for a in many for b in many]) > levenshtein.PYTHON_CELLS
    got, want = _scores(many, 300, 2)  # hundreds of distinct long pairs: rapidfuzz
    assert got == want
