"""msgspec's reading of many texts as the lines of one gives what reading each text alone gives, on generated texts
that start with ``{`` and end with ``}`` (the precondition) but hold anything between: line breaks, two objects,
halves of objects that would join across texts, strings, wrong types."""

from __future__ import annotations

import random

import msgspec

from vision_eval.structured import msgpath

PIECES = ['{"a":1}', '{"a":{"b":"x"}}', '{"a":', '{"a":"', '"}', "}", "{", ",", ":", " ", "\n", "\r", '"b"', "1"]
PIECES += ['{"a":"x\\n"}', '{"c":[1,{}]}', '{"a":"s"}', '{"a":null}', "\u2028"]


SHAPES = ['{"a":1}', '{"a":{"b":"x"}}', '{"c":[1,{}]}', '{"a":"\u2028"}', '{"a":"}{"}', '{"a":1}\n{"a":2}']


def _texts(rng: random.Random, count: int) -> list[str]:
    def text() -> str:
        if rng.random() < 0.7:
            return rng.choice(SHAPES).rstrip() + "}"[: int(rng.random() < 0.2)]
        return "{" + "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 4))) + "}"

    return [text() for _ in range(count)]


def _read(texts: list[str], as_lines: bool) -> list[object]:
    decoder, _ = msgpath._reader((("a",), ("c",)))
    unread = decoder.type()
    error = (msgspec.DecodeError, msgspec.ValidationError)
    docs = msgpath._decode(texts, decoder, error, unread, as_lines)
    return [None if d is unread else msgspec.json.encode(d) for d in docs]


def test_lines_read_as_each_text_alone() -> None:
    rng = random.Random(11)
    by_lines = 0
    for _ in range(3000):
        texts = _texts(rng, rng.randrange(1, 5))
        got = _read(texts, as_lines=True)
        assert got == _read(texts, as_lines=False), texts
        by_lines += None not in got
    assert by_lines > 100  # the generated chunks include many that every text reads
