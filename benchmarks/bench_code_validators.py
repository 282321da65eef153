"""Throughput of the code validators: built-in (vectorized) vs a row-wise Python loop doing the same work,
and code_judge batch mode vs one process per row.

    PYTHONPATH=. python benchmarks/bench_code_validators.py [--rows 1000000] [--loop-rows 50000] [--judge-rows 20000]

The row-wise loop and process-per-row are measured on a sample (``--loop-rows``, ``--process-rows``) and
reported as rows/s, which is what they would sustain on the full frame. Each loop is the built-in's algorithm
in plain Python (``re``, dicts) one row at a time and yields the same results, details included (serialized
as JSON text like the built-ins'): json_validator's loop calls ``check_one``, the per-row semantics the built-in
keeps as its oracle and uses for the rows its column-wise path (shapes of expected_output, DuckDB ``json_extract``
and Polars: ``vision_eval.validators.json_columns``) cannot decide exactly.
``--only`` and ``--no-judge`` run a subset; the load average is printed because the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vision_eval.evaluators.code_judge import CodeJudge, CodeJudgeSettings
from vision_eval.evaluators.code_validators import (
    ChartValidator,
    ChartValidatorSettings,
    CountValidator,
    CountValidatorSettings,
    JsonValidator,
    JsonValidatorSettings,
    OcrValidator,
    OcrValidatorSettings,
)
from vision_eval.validators import chart as chart_mod
from vision_eval.validators import count_text as count_mod
from vision_eval.validators import ocr as ocr_mod
from vision_eval.validators.json_check import JsonOptions, check_one

SHAPES = ["circles", "squares", "triangles", "stars"]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fmt(template: str, *values: pl.Expr | pl.Series) -> pl.Expr:
    """``template`` with each ``{}`` replaced by a value (``pl.format`` refuses literal braces)."""
    pieces = template.split("{}")
    parts: list[pl.Expr] = []
    for piece, value in zip(pieces, [*values, None]):
        parts.append(pl.lit(piece))
        if value is not None:
            parts.append((pl.lit(value) if isinstance(value, pl.Series) else value).cast(pl.Utf8))
    return pl.concat_str(parts)


NOUNS = ["bottles", "cans", "cups", "boxes", "apples", "chairs", "books", "pens", "plates", "bags", "glasses", "keys"]
COLORS = ["red", "blue", "green", "white", "black", "yellow", "small", "large"]
VENDORS = ["Northwind", "Contoso", "Fabrikam", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Acme", "Hooli"]


def _typo(text: pl.Expr, at: pl.Series, apply: pl.Series) -> pl.Expr:
    """``text`` with the character at ``at`` (a fraction of its length) dropped where ``apply``."""
    pos = (pl.lit(at) * text.str.len_chars()).cast(pl.Int64)
    dropped = pl.concat_str([text.str.slice(0, pos), text.str.slice(pos + 1)])
    return pl.when(pl.lit(apply)).then(dropped).otherwise(text)


def make_frames(n: int, seed: int = 0) -> dict[str, pl.DataFrame]:
    """Test data whose texts are nearly all distinct, as model outputs are: the built-ins must not win by scoring
    repeated texts once (the share of distinct rows is printed with the results)."""
    rng = np.random.default_rng(seed)
    ids = pl.Series("id", np.arange(n).astype(str))
    scene = pl.Series(rng.integers(10_000, 10_000_000, n))
    a, b = rng.integers(1, 60, n), rng.integers(1, 60, n)
    n1, n2 = rng.integers(0, len(NOUNS), n), (rng.integers(1, len(NOUNS), n) + 0) % len(NOUNS)
    n2 = np.where(n2 == n1, (n1 + 1) % len(NOUNS), n2)
    c1, c2 = rng.integers(0, len(COLORS), n), rng.integers(0, len(COLORS), n)
    wordy = rng.random(n) < 0.3
    units, tens = count_mod._UNITS, {value: name for name, value in count_mod._TENS.items()}
    spelled = pl.Series(
        [units[x] if x < 20 else tens[x - x % 10] + (f"-{units[x % 10]}" if x % 10 else "") for x in range(60)]
    )
    first = pl.when(pl.Series(wordy)).then(spelled.gather(a)).otherwise(pl.Series(a).cast(pl.Utf8))
    nouns, colors = pl.Series(NOUNS), pl.Series(COLORS)
    count = pl.DataFrame({"id": ids}).with_columns(
        fmt(
            "Scene {}: I count {} {} {} and {} {} {} on the table.",
            scene,
            first,
            colors.gather(c1),
            nouns.gather(n1),
            pl.Series(b),
            colors.gather(c2),
            nouns.gather(n2),
        ).alias("output"),
        fmt("{} {}, {} {}", pl.Series(a), nouns.gather(n1), pl.Series(b + (rng.random(n) < 0.3)), nouns.gather(n2))
        .alias("expected_output"),
    )
    vendor = pl.Series(VENDORS).gather(rng.integers(0, len(VENDORS), n))
    amount = pl.Series(np.round(rng.uniform(10, 99_999, n), 2))
    day = pl.Series(rng.integers(1, 29, n))
    expected_ocr = fmt("Invoice INV-{} from {} Ltd, total {} EUR, due 2026-03-{}", scene, vendor, amount, day)
    ocr = pl.DataFrame({"id": ids, "vendor": vendor}).with_columns(
        pl.concat_list(pl.col("vendor").str.to_lowercase(), pl.lit("total")).alias("keywords")
    )
    ocr = ocr.drop("vendor").with_columns(
        _typo(expected_ocr, pl.Series(rng.random(n)), pl.Series(rng.random(n) < 0.5)).alias("output"),
        expected_ocr.alias("expected_output"),
    )
    total = rng.integers(100, 5000, n)
    expected = fmt(
        '{"invoice_number": "INV-{}", "vendor_name": "Northwind", "total_amount": {}, "currency": "USD", '
        '"line_items": [{"description": "Widgets", "quantity": 2, "amount": {}}]}',
        pl.Series(np.arange(n)),
        pl.Series(total),
        pl.Series(total),
    )
    wrong = pl.Series(total + (rng.random(n) < 0.2) * 7)
    output = fmt(
        'Here you go:\n```json\n{"invoice_number": "INV-{}", "vendor_name": "Northwind", "total_amount": {}, '
        '"line_items": [{"description": "Widgets", "quantity": 2, "amount": {}}]}\n```',
        pl.Series(np.arange(n)),
        wrong,
        pl.Series(total),
    )
    invoice = pl.DataFrame({"id": ids}).with_columns(output.alias("output"), expected.alias("expected_output"))
    v = np.round(rng.uniform(0.1, 99.9, (n, 2)), 1)
    growth = np.round(rng.uniform(1, 99, n), 1)
    q1, q2 = pl.Series(rng.integers(1, 5, n)), pl.Series(rng.integers(1, 5, n))
    y1, y2 = pl.Series(rng.integers(2019, 2027, n)), pl.Series(rng.integers(2019, 2027, n))
    chart = pl.DataFrame({"id": ids}).with_columns(
        fmt(
            "1. Q{} {} revenue was ${}M\n2. Q{} {} peaked at ${}M, up {}% from Q{}.",
            q1,
            y1,
            pl.Series(v[:, 0]),
            q2,
            y2,
            pl.Series(v[:, 1]),
            pl.Series(growth),
            q1,
        ).alias("output"),
        fmt(
            "Q{} {}: ${}M; Q{} {}: ${}M; growth: {}%",
            q1,
            y1,
            pl.Series(v[:, 0]),
            q2,
            y2,
            pl.Series(np.round(v[:, 1] * 1.1, 2)),
            pl.Series(np.round(growth + (rng.random(n) < 0.2), 1)),
        ).alias("expected_output"),
    )
    return {"count": count, "ocr": ocr, "json": invoice, "chart": chart}


# ---- row-wise baselines: the same algorithms with `re` and plain Python, one row at a time ------

_NUM_WORDS = sorted(count_mod.NUMBER_WORDS, key=len, reverse=True)
_NUM_RX = re.compile(r"\b(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in _NUM_WORDS) + r")\b")
_STOP = re.compile(r"\b(?:" + "|".join(count_mod.STOP_WORDS) + r")\b")
_PAIR = re.compile(r"\d+ [a-z][a-z'-]*(?: [a-z][a-z'-]*){0,2}")
_COLON = re.compile(r"([a-z][a-z'-]*)\s*[:=]\s*(\d+)")


def _singular(word: str) -> str:
    if word in count_mod.IRREGULAR:
        return count_mod.IRREGULAR[word]
    if re.search(r"[^aeiou]ies$", word):
        return word[:-3] + "y"
    if re.search(r"(?:ss|x|z|ch|sh)es$", word):
        return word[:-2]
    if re.search(r"[^su]s$", word) and len(word) > 3:
        return word[:-1]
    return word


def _mentions(text: str) -> list[tuple[int, list[str]]]:
    text = re.sub(r"([^a-z0-9\s'-])", r" \1 ", (text or "").lower())
    text = _NUM_RX.sub(lambda m: str(count_mod.NUMBER_WORDS[" ".join(m.group(0).split())]), text)
    text = re.sub(r"\s+", " ", _STOP.sub(",", _COLON.sub(r"\2 \1", text)))
    out = []
    for pair in _PAIR.findall(text):
        number, rest = pair.split(" ", 1)
        out.append((int(number), [_singular(w) for w in rest.split(" ")]))
    return out


def count_row(output: str, expected: str) -> dict:
    want: dict[str, int] = {}
    for n, words in _mentions(expected):
        want.setdefault(words[-1], n)
    first: dict[str, int] = {}
    total: dict[str, int] = {}
    for n, words in _mentions(output):
        key = next((w for w in words if w in want), words[-1])
        first.setdefault(key, n)
        total[key] = total.get(key, 0) + n
    ok = {k: first.get(k) == n or total.get(k) == n or (k not in first and n == 0) for k, n in want.items()}
    score = sum(ok.values()) / len(ok) if ok else None
    details = {"expected": want, "found": first, "matched": {k: want[k] for k, v in ok.items() if v}}
    return {"status": "processed", "score": score, "details": json.dumps(details)}


_OCR_PUNCT = re.compile(ocr_mod._PUNCTUATION)


def ocr_row(output: str, expected: str, keywords: list[str] | None) -> dict:
    from rapidfuzz import fuzz

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", _OCR_PUNCT.sub(" ", (text or "").lower())).strip()

    got, want = norm(output), norm(expected)
    sim = fuzz.ratio(got, want) / 100 if got or want else 1.0
    keywords = [k for k in keywords or [] if k is not None and k.strip()]
    hits = [norm(k) in got for k in keywords]
    found = [k for k, hit in zip(keywords, hits) if hit]
    acc = len(found) / len(keywords) if keywords else None
    w_sim, w_kw = (0.7, 0.3) if keywords else (1.0, 0.0)
    score = min(max(w_sim * sim + w_kw * (acc or 0.0), 0.0), 1.0)
    details = {
        "similarity": round(sim, 4),
        "keyword_accuracy": None if acc is None else round(acc, 4),
        "keywords_found": found,
        "keywords_missing": [k for k, hit in zip(keywords, hits) if not hit],
        "weights": {"similarity": w_sim, "keywords": w_kw},
        "scorer": "ratio",
    }
    return {"status": "processed", "score": score, "details": json.dumps(details)}


_FENCE = re.compile(r"```(?:json|JSON)?\s*([\s\S]*?)```")
_EMBED = re.compile(r"([\{\[][\s\S]*[\}\]])")


def json_row(output: str, expected: str, opts: JsonOptions) -> dict:
    m = _FENCE.search(output) or _EMBED.search(output)
    candidate = m.group(1).strip() if m else output.strip()
    result = check_one(output, candidate, expected, opts)  # the built-in's per-row function
    if "details" in result:  # results hold details as JSON text
        result["details"] = json.dumps(result["details"], ensure_ascii=False, default=str)
    return result


def _py_regex(pattern: str) -> re.Pattern[str]:
    """A Rust pattern of the chart module for Python's ``re`` (ASCII word boundaries, ``(?i)`` as a flag)."""
    return re.compile(pattern.replace("(?i)", "").replace("(?-u:\\b)", "\\b"), re.I)


_ANY = _py_regex(chart_mod._ANY)
_MONEY_PARTS = _py_regex(chart_mod._MONEY_PARTS)
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_QUARTER_START = re.compile(r"^q[1-4]", re.I)
_PERCENT_END = re.compile(r"(?:%|percent|per cent|pct)$", re.I)
_MONTH_START = re.compile(r"^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)", re.I)
_DAY = re.compile(r"\s(\d{1,2})(?:st|nd|rd|th)?,?\s")


def _chart_values(text: str) -> list[tuple[str, str, float | None, str | None, str | None]]:
    """(kind, text, value, key, year) of each value, money first, as the built-in orders them."""
    money: list[tuple[str, str, float | None, str | None, str | None]] = []
    rest: list[tuple[str, str, float | None, str | None, str | None]] = []
    for m in _ANY.finditer(text or ""):
        t = m.group(0).strip()
        if _ISO.match(t):
            rest.append(("date", t, None, t, None))
        elif _QUARTER_START.match(t):
            year = re.search(r"(\d{2,4})$", t)
            y = year.group(1) if year else None
            rest.append(("date", t, None, "Q" + t[1], "20" + y if y and len(y) == 2 else y))
        elif _PERCENT_END.search(t):
            rest.append(("percent", t, float(re.search(r"[-+]?\d+(?:\.\d+)?", t).group(0)), None, None))
        elif _MONTH_START.match(t):
            day = _DAY.search(t)
            year = re.search(r"(\d{4})$", t)
            key = f"{year.group(1)}-{chart_mod._MONTHS[t[:3].lower()]}" + (f"-{day.group(1):0>2}" if day else "")
            rest.append(("date", t, None, key if year else None, None))
        else:
            parts = _MONEY_PARTS.match(t)
            if parts and (parts["sym"] or parts["suf"] or parts["word"] or "," in parts["num"]):
                scale = chart_mod._SCALE.get((parts["suf"] or "").lower(), 1.0)
                money.append(("money", t, float(parts["num"].replace(",", "")) * scale, None, None))
    return money + rest


def chart_row(output: str, expected: str, tol: tuple[float, float, float] = (0.15, 0.0, 0.0)) -> dict:
    """The built-in's algorithm for one row: extract, pair same-kind values, assign closest pairs one-to-one."""
    currency, percent, zero = tol
    got = _chart_values(output)
    want = _chart_values(expected)
    if not want:
        return {
            "status": "error",
            "score": None,
            "error": "expected_output holds no currency, percentage or date values",
        }
    candidates = []
    closest: list[int | None] = []
    for i, (kind, _, w, key, year) in enumerate(want):
        best, best_dist = None, math.inf
        for j, (k, _, value, key_a, year_a) in enumerate(got):
            if k != kind:
                continue
            if kind == "date":
                ok, dist = key == key_a and (year == year_a or year is None or year_a is None), 0.0
            else:
                diff = abs(value - w)
                dist = diff if w == 0 else diff / abs(w)
                ok = diff <= percent + 1e-9 if kind == "percent" else dist <= (zero if w == 0 else currency) + 1e-9
            if ok:
                candidates.append((dist, i, j))
            if best is None or dist < best_dist:
                best, best_dist = j, dist
        closest.append(best)
    hit: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in sorted(candidates):  # closest pairs first, one-to-one
        if i not in hit and j not in used:
            hit[i] = j
            used.add(j)
    values = []
    for i, (kind, text, value, _, _) in enumerate(want):
        j = hit.get(i, closest[i])
        actual = got[j][1] if j is not None else None
        values.append({"kind": kind, "expected": text, "value": value, "matched": i in hit, "actual": actual})
    details = {
        "values": values,
        "matched": len(hit),
        "expected": len(want),
        "tolerances": {"currency": currency, "percent": percent, "zero": zero},
        "reasoning": f"{len(hit)} of {len(want)} expected values found in the response",
    }
    return {"status": "processed", "score": len(hit) / len(want), "details": json.dumps(details)}


def row_loop(kind: str, frame: pl.DataFrame) -> list[dict]:
    opts = JsonOptions()
    if kind == "count":
        return [count_row(o, e) for o, e in zip(frame["output"].to_list(), frame["expected_output"].to_list())]
    if kind == "ocr":
        return [
            ocr_row(o, e, k)
            for o, e, k in zip(
                frame["output"].to_list(), frame["expected_output"].to_list(), frame["keywords"].to_list()
            )
        ]
    if kind == "json":
        return [json_row(o, e, opts) for o, e in zip(frame["output"].to_list(), frame["expected_output"].to_list())]
    return [chart_row(o, e) for o, e in zip(frame["output"].to_list(), frame["expected_output"].to_list())]


BUILTINS = {
    "count": (CountValidator, CountValidatorSettings()),
    "ocr": (OcrValidator, OcrValidatorSettings()),
    "json": (JsonValidator, JsonValidatorSettings()),
    "chart": (ChartValidator, ChartValidatorSettings()),
}

JUDGE = """
import json, sys
for line in sys.stdin:
    if line.strip():
        row = json.loads(line)
        print(json.dumps({"id": row["id"], "score": float(row["output"] == row["expected_output"])}))
"""


def bench_judge(rows: int, process_rows: int, batch_size: int) -> tuple[float, float]:
    import asyncio

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "judge.py"
        script.write_text(JUDGE)
        frame = pl.DataFrame(
            {"id": [str(i) for i in range(rows)], "output": ["a"] * rows, "expected_output": ["a"] * rows}
        )
        command = [sys.executable, "-S", str(script)]
        batch = CodeJudge("j", CodeJudgeSettings(command=command, batch_size=batch_size, concurrency=2))
        start = time.perf_counter()
        out = asyncio.run(batch.aevaluate(frame)).results
        batch_rate = rows / (time.perf_counter() - start)
        assert out["status"].eq("processed").all(), out.filter(pl.col("status") != "processed").head(3)
        per_row = CodeJudge("j", CodeJudgeSettings(command=command, concurrency=2))
        start = time.perf_counter()
        out = asyncio.run(per_row.aevaluate(frame.head(process_rows))).results
        process_rate = process_rows / (time.perf_counter() - start)
        assert out["status"].eq("processed").all()
    return batch_rate, process_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per validator for the built-ins")
    parser.add_argument("--loop-rows", type=int, default=20_000, help="rows the row-wise loop is measured on")
    parser.add_argument(
        "--json-rows", type=int, default=100_000, help="rows for json_validator (its row-wise fallback is Python)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="best of this many timings")
    parser.add_argument(
        "--batch-size", type=int, default=50_000, help="rows per evaluate() call, as the engine's run.batch_size"
    )
    parser.add_argument("--judge-rows", type=int, default=20_000, help="rows for batch-mode code_judge")
    parser.add_argument("--process-rows", type=int, default=20, help="rows for process-per-row code_judge")
    parser.add_argument("--only", nargs="*", choices=list(BUILTINS), help="validators to run (default: all)")
    parser.add_argument("--no-judge", action="store_true", help="skip the code_judge measurement")
    args = parser.parse_args()

    start = time.perf_counter()
    frames = make_frames(args.rows)
    print(f"generated {args.rows:,} rows per validator in {time.perf_counter() - start:.1f} s")
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"built-ins run in batches of {args.batch_size:,} rows (the engine's run.batch_size)\n")
    print(
        f"{'validator (rows)':<18} {'distinct':>8} {'built-in rows/s':>16} {'row-wise rows/s':>16} {'speed-up':>9}"
        "   mean score (built-in / loop), every sampled row agrees"
    )
    for kind, (cls, settings) in BUILTINS.items():
        if args.only and kind not in args.only:
            continue
        frame = frames[kind] if kind != "json" else frames[kind].head(args.json_rows)
        evaluator = cls(kind, settings)
        sample = frame.head(min(args.loop_rows, frame.height))
        builtin_rate = loop_rate = 0.0
        for _ in range(args.repeat):  # alternate, so both see the same load on a shared machine
            start = time.perf_counter()
            results = pl.concat(
                [evaluator.evaluate(part).results for part in frame.iter_slices(args.batch_size)],
                how="vertical_relaxed",
            )
            builtin_rate = max(builtin_rate, frame.height / (time.perf_counter() - start))
            start = time.perf_counter()
            looped = row_loop(kind, sample)
            loop_rate = max(loop_rate, sample.height / (time.perf_counter() - start))
        loop_scores = [r.get("score") for r in looped]
        loop_mean = float(np.mean([x for x in loop_scores if x is not None]))
        built_scores = results.head(sample.height)["score"].to_list()
        agree = all(
            (x is None and y is None) or (x is not None and y is not None and abs(x - y) < 1e-9)
            for x, y in zip(built_scores, loop_scores)
        )
        distinct = frame.select("output", "expected_output").n_unique() / frame.height
        print(
            f"{kind + f' ({frame.height:,})':<18} {distinct:>8.0%} {builtin_rate:>16,.0f} {loop_rate:>16,.0f}"
            f" {builtin_rate / loop_rate:>8.1f}x"
            f"   {results.head(sample.height)['score'].mean():.4f} / {loop_mean:.4f}, {agree}"
        )
    print(f"\nload average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.no_judge:
        return
    batch_rate, process_rate = bench_judge(args.judge_rows, args.process_rows, batch_size=5_000)
    print(
        f"\ncode_judge batch mode: {batch_rate:,.0f} rows/s ({args.judge_rows:,} rows, batches of 5,000); "
        f"process per row: {process_rate:,.1f} rows/s ({args.process_rows} rows sampled); "
        f"speed-up {batch_rate / process_rate:,.0f}x"
    )


if __name__ == "__main__":
    main()
