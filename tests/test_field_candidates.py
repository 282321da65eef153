"""The candidate texts of loose responses (fenced blocks, objects in prose) are what the capture-group regexes they
replace would find, on generated texts full of backtick runs, braces, tags and line breaks."""

from __future__ import annotations

import random

import polars as pl

from vision_eval.structured import candidates
from vision_eval.structured.values import FENCE

PIECES = ["`", "``", "```", "````", "{", "}", '{"a": 1}', "json", "JSON", " ", "\t", "\n", "x", "ü", "\r\n", "```py\n"]


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 12))) for _ in range(count)]


def test_fenced_and_prose_candidates_equal_the_capturing_regexes() -> None:
    texts = pl.Series("t", [*_texts(3, 20_000), "```json\n{}\n```", "say {x} and {y}", "``````", "`````", "} {"])
    frame = texts.to_frame().with_columns(pl.lit(True).alias("other"), pl.lit(True).alias("plain"))
    frame = frame.with_columns(texts.str.contains("```", literal=True).alias("fence"))
    *steps, _ = candidates._loose_stages()  # the last step picks the candidate; "other" decides what each step reads
    for stage in steps[3:]:
        frame = frame.with_columns(stage)
    fence = frame["fence"]
    want_fenced = texts.str.extract(FENCE, 1).str.strip_chars(candidates.SPACES)
    want_prose = texts.str.extract(r"(?s)(\{.*\})", 1)
    assert frame["fenced"].to_list() == [f if has else None for f, has in zip(want_fenced, fence)]
    assert frame["prose"].to_list() == [p if not has else None for p, has in zip(want_prose, fence)]
