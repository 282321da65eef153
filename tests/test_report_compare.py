"""Comparing runs in the report: a real sweep (the CLI as a user runs it) reported by `vision-eval-report`, one card
per sample with every variant's verdict, the changed-between-variants filter, the pivot, the 1400 px layout, and
big runs: the cards are a bounded, seeded choice (said so on the page) while every aggregate covers all rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from chromium import Browser
from test_report import payload_of

import vision_eval as ve
from vision_eval.leaderboard import bootstrap_interval, write_leaderboard
from vision_eval.report import Limits, build_html, load_runs, write_report
from vision_eval.report.selection import VERDICTS, verdict

WORDS = ["red", "circle", "big"]
THRESHOLDS = (0.3, 0.6, 1.0)


def sweep_rows() -> list[dict[str, Any]]:
    """Row i holds i % 4 of the three words: `words` scores 0, 1/3, 2/3 or 1; the last row has no output."""
    rows = [
        {"id": f"s{i:02d}", "input": "Describe.", "output": " ".join(WORDS[: i % 4]) + f" (row {i})",
         "expected_output": "red circle big"}
        for i in range(12)
    ]  # fmt: skip
    return [*rows, {"id": "s12", "input": "Describe.", "output": None, "expected_output": "x"}]


def changed_ids() -> set[str]:
    """Samples whose `words` verdict differs between the thresholds 0.3, 0.6 and 1.0 (scores 1/3 and 2/3)."""
    return {f"s{i:02d}" for i in range(12) if i % 4 in (1, 2)}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`vision-eval -m` over three thresholds x two shards, then `vision-eval-report` on the sweep folder."""
    from conftest import child_env

    root = tmp_path_factory.mktemp("sweep")
    (root / "conf" / "dataset").mkdir(parents=True)
    (root / "conf" / "evaluators").mkdir()
    (root / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sweep_rows()))
    (root / "conf" / "dataset" / "mine.yaml").write_text(f"path: {root / 'rows.jsonl'}\n")
    (root / "conf" / "evaluators" / "words.yaml").write_text(
        f"words:\n  type: contains\n  value: {json.dumps(WORDS)}\nexact:\n  type: exact_match\n"
    )
    env = child_env()
    thresholds = ",".join(str(t) for t in THRESHOLDS)
    command = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(root / "conf"), "-m", "dataset=mine",
               "evaluators=words", f"evaluators.words.threshold={thresholds}", "run.shard=0/2,1/2",
               "run.max_error_rate=0.5", "hydra.sweep.dir=sweep"]  # fmt: skip
    run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = subprocess.run(
        [sys.executable, "-m", "vision_eval.report.cli", "sweep"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    assert "6 run directories" in report.stdout
    return root / "sweep"


def _count(chrome: Browser) -> int:
    return int(chrome.js("+document.getElementById('match-count').dataset.count"))


def _cards(chrome: Browser) -> list[str]:
    return chrome.js("[...document.querySelectorAll('article.sample')].map(a => a.dataset.sampleId)")


LABELS = [f"evaluators.words.threshold={t}" for t in THRESHOLDS]


def test_sweep_payload_one_card_per_sample_and_changed(sweep: Path) -> None:
    payload = payload_of((sweep / "report.html").read_text())
    assert payload["labels"] == LABELS  # the jobs' overrides, the shard left out: shards merge into their variant
    assert [s["id"] for s in payload["samples"]] == [r["id"] for r in sweep_rows()]  # dataset order, shards rejoined
    for sample in payload["samples"]:
        assert sorted((r["run"], r["evaluator"]) for r in sample["results"]) == sorted(
            (label, e) for label in LABELS for e in ("words", "exact")
        )
    assert {s["id"] for s in payload["samples"] if "words" in s.get("changed", [])} == changed_ids()
    assert not any("exact" in s.get("changed", []) for s in payload["samples"])  # the error row errs in all three
    assert payload["pivot"]["changed"] == {"words": len(changed_ids())}


def test_sweep_pivot_and_flip_filter_in_chromium(sweep: Path, browser: Browser) -> None:
    url = (sweep / "report.html").resolve().as_uri()
    browser.open(url)
    assert browser.js("document.body.dataset.ready") == "true"
    assert _count(browser) == 13 and len(_cards(browser)) == 13  # one card per sample, not one per run

    # The pivot: evaluators x variants, each cell the leaderboard's mean, interval and pass rate.
    headers = browser.js("[...document.querySelectorAll('table.pivot thead th')].map(th => th.textContent)")
    assert headers == ["Evaluator", *LABELS]
    board = pl.read_parquet(sweep / "leaderboard.parquet")
    cells = browser.js(
        "[...document.querySelectorAll('table.pivot tbody tr')].map(tr => [...tr.children].map(td => td.textContent))"
    )
    rows = {row[0].split("\u21c4")[0].split("no sample changed")[0]: row[1:] for row in cells}
    assert set(rows) == {"words", "exact"}
    for label, text in zip(LABELS, rows["words"], strict=True):
        cell = board.filter((pl.col("evaluator") == "words") & (pl.col("variant") == label)).row(0, named=True)
        assert text.startswith(f"{cell['mean_score']:.3f}")
        assert f"95% CI {cell['ci_low']:.3f}\u2013{cell['ci_high']:.3f}" in text
        assert f"pass {cell['pass_rate'] * 100:.1f}%" in text
    passing = [sum(1 for i in range(12) if (i % 4) / 3 >= t - 1e-9) / 12 for t in THRESHOLDS]
    assert [f"pass {p * 100:.1f}%" in text for p, text in zip(passing, rows["words"], strict=True)] == [True] * 3
    assert "6 samples changed of 13 compared" in cells[0][0] or "6 samples changed of 13 compared" in cells[1][0]
    assert any(cell[0] == "exactno sample changed (13 compared)" for cell in cells)
    pairing = browser.js("document.querySelector('.notice.pairing').textContent")
    assert pairing == "Pairing: 13 of 13 samples paired across variants (the same id and content)."

    # The pivot's link filters the cards to the samples that flipped.
    browser.js("document.querySelector('table.pivot a.changed-link').click()")
    browser.js("void 0")  # let the hashchange handler run
    assert "changed=1" in browser.js("location.hash") and "evaluator=words" in browser.js("location.hash")
    assert _count(browser) == 6 and set(_cards(browser)) == changed_ids()
    assert browser.js("[...document.querySelectorAll('article.sample')].every(a => a.dataset.changed === 'words')")
    # A card: one verdict row per evaluator, one column per variant; the flipped row says so.
    verdicts = browser.js(
        "[...document.querySelector('article.sample[data-sample-id=\"s01\"] table.verdicts tr.changed').children]"
        ".map(c => c.textContent)"
    )
    assert verdicts == ["words \u21c4 changed", "\u2713 passed 0.33", "\u2717 failed 0.33", "\u2717 failed 0.33"]

    # The same filter from the form, and from the URL with another evaluator (none of its verdicts changed).
    browser.open(url)
    browser.js(
        "(() => { const s = document.getElementById('f-changed'); s.value = '1';"
        " s.dispatchEvent(new Event('change')); })()"
    )
    browser.js("new Promise(r => setTimeout(r, 50))")
    assert _count(browser) == 6
    browser.open(url + "#changed=1&evaluator=exact")
    assert _count(browser) == 0
    # One variant's failures: the verdict of that variant only.
    browser.open(url + "#run=" + LABELS[1] + "&evaluator=words&outcome=failed")
    assert _count(browser) == sum(1 for i in range(12) if i % 4 < 2)


def _variant_runs(
    folder: Path,
    outputs: list[list[str | None]],
    labels: list[str],
    expected: dict[tuple[int, int], str] | None = None,
    extra: dict[str, Any] | None = None,
) -> list[Path]:
    """One run directory per variant (its overrides in run.json, as a sweep job records them); ``expected``: the
    expected output of (variant, row), where it is not "red circle big"."""
    from conftest import shape_png

    if not (folder / "img.png").exists():
        (folder / "img.png").write_bytes(shape_png((200, 30, 30), 2))
    dirs = []
    for index, (texts, label) in enumerate(zip(outputs, labels, strict=True)):
        rows = [
            {"id": f"s{i}", "input": "Which words?", "output": text,
             "expected_output": (expected or {}).get((index, i), "red circle big"), "images": [str(folder / "img.png")]}
            for i, text in enumerate(texts)
        ]  # fmt: skip
        out = folder / "sweep" / str(index)
        stack = {"words": {"type": "contains", "value": WORDS, "threshold": 0.5}, "exact": {"type": "exact_match"}}
        stack.update(extra or {})
        ve.evaluate(rows, evaluators=stack, output_dir=out, run={"write_report": False})
        info = json.loads((out / "run.json").read_text())
        info["overrides"] = label.split(" ")
        info["config"]["candidate"] = {"model": label}  # a different config per variant, as a sweep's jobs have
        (out / "run.json").write_text(json.dumps(info))
        dirs.append(out)
    return dirs


def test_error_versus_processed_is_a_change_and_responses_show_per_variant(tmp_path: Path) -> None:
    from conftest import shape_png

    (tmp_path / "img.png").write_bytes(shape_png((200, 30, 30), 2))
    outputs = [["red circle", "red circle big", "big"], ["red circle", None, "big"]]
    dirs = _variant_runs(tmp_path, outputs, ["candidate.model=a", "candidate.model=b"])
    payload = payload_of(build_html(load_runs(dirs)))
    cards = {s["id"]: s for s in payload["samples"]}
    assert "changed" not in cards["s0"] and "changed" not in cards["s2"]
    assert cards["s1"]["changed"] == ["exact", "words"]  # processed in one variant, an error in the other
    assert cards["s0"]["output"] == "red circle" and "variants" not in cards["s0"]  # the same response: shown once
    assert cards["s1"]["variants"] == {
        "candidate.model=a": {"output": "red circle big"},
        "candidate.model=b": {"output": None},
    }
    assert cards["s1"]["input"] == "Which words?" and len(cards["s1"]["images"]) == 1  # shared fields stay shared
    # Without a leaderboard at hand, the pivot computes the same one vision-eval-report writes.
    board, _ = write_leaderboard(dirs, tmp_path)
    for cell in payload["pivot"]["cells"]:
        row = board.filter((pl.col("variant") == cell["variant"]) & (pl.col("evaluator") == cell["evaluator"]))
        expected = row.select("mean_score", "ci_low", "ci_high", "pass_rate", "error_rate").row(0, named=True)
        assert {k: cell[k] for k in expected} == pytest.approx(expected)
    assert len(payload["pivot"]["cells"]) == 4 and payload["pivot"]["changed"] == {"exact": 1, "words": 1}


PIVOT_COLUMNS = ["variant", "evaluator", "rows", "skipped", "errors", "mean_score", "ci_low", "ci_high", "pass_rate",
                 "error_rate", "rank", "tied_with_best", "p_vs_best", "vs_best_test", "protocol"]  # fmt: skip
"""What a pivot cell tells, in this order: the leaderboard's columns the page shows."""


def _assert_cells(found: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """The pivot's cells are the expected leaderboard rows (in any order: tied rows come either way), each with
    the same keys in order, floats within 1e-9."""
    assert [list(cell) for cell in found] == [PIVOT_COLUMNS] * len(expected)
    by_key = {(row["variant"], row["evaluator"]): row for row in expected}
    assert sorted(by_key) == sorted((cell["variant"], cell["evaluator"]) for cell in found)
    for cell in found:
        row = by_key[(cell["variant"], cell["evaluator"])]
        assert cell == {k: pytest.approx(v, abs=1e-9) if isinstance(v, float) else v for k, v in row.items()}


def test_the_pivot_shows_the_leaderboard_that_comes_with_the_runs(tmp_path: Path) -> None:
    """A leaderboard given with the runs (vision-eval-report writes one and hands it on) is the pivot's, cell for
    cell, without its other variants; one that lacks a variant of the runs, or has no variant column, is not: the
    pivot computes the leaderboard from the runs' results instead."""
    labels = ["candidate.model=a", "candidate.model=b"]
    dirs = _variant_runs(tmp_path, [["red circle", "red circle big", "big"], ["red", None, "big"]], labels)
    computed, _ = write_leaderboard(dirs, tmp_path / "board")
    assert set(computed["variant"]) == set(labels) and computed.height == 4
    # Another leaderboard of these runs, off by a little in every number, with a third variant the report lacks.
    off = computed.with_columns(
        pl.col("mean_score", "ci_low", "ci_high", "pass_rate", "error_rate", "p_vs_best") + 0.001,
        pl.col("rows", "skipped", "errors") + 1,
        ~pl.col("tied_with_best"),
        pl.col("vs_best_test").fill_null("none"),
        pl.lit("given").alias("protocol"),
    )
    other = off.filter(pl.col("variant") == labels[0]).with_columns(pl.lit("candidate.model=c").alias("variant"))
    given = pl.concat([off, other])

    payload = payload_of(build_html(load_runs(dirs, given)))
    assert payload["pivot"]["variants"] == labels and payload["pivot"]["evaluators"] == ["words", "exact"]
    _assert_cells(payload["pivot"]["cells"], off.select(PIVOT_COLUMNS).to_dicts())
    exactly = payload_of(build_html(load_runs(dirs, off)))  # the report's variants and no other
    _assert_cells(exactly["pivot"]["cells"], off.select(PIVOT_COLUMNS).to_dicts())

    recomputed = computed.select(PIVOT_COLUMNS).to_dicts()
    lacking = given.filter(pl.col("variant") != labels[1])
    _assert_cells(payload_of(build_html(load_runs(dirs, lacking)))["pivot"]["cells"], recomputed)
    unlabelled = given.drop("variant")
    _assert_cells(payload_of(build_html(load_runs(dirs, unlabelled)))["pivot"]["cells"], recomputed)
    _assert_cells(payload_of(build_html(load_runs(dirs)))["pivot"]["cells"], recomputed)


def test_the_pivot_computed_from_the_runs_names_each_benchmark_score_s_protocol(tmp_path: Path) -> None:
    """Without a leaderboard, the pivot's leaderboard reads each evaluator's protocol from its run's run.json: a
    benchmark metric scored under two protocols is shown with each, and not ranked (the scores are not comparable);
    an evaluator that is not a benchmark metric has none and is ranked."""
    rows = [
        {"id": "a", "output": "i  a", "expected_output": "a"},  # ANLS 0.5 under the reference, 0 under lenient
        {"id": "b", "output": "ITC Limited", "expected_output": "itc limited"},  # 1 under both
    ]
    dirs = []
    for protocol in ("official", "lenient"):
        ve.evaluate(
            rows,
            evaluators={"anls": {"type": "anls", "protocol": protocol}, "em": {"type": "exact_match"}},
            dataset={"description": protocol},
            run={"progress": False, "write_report": False},
            output_dir=tmp_path / protocol,
        )
        dirs.append(tmp_path / protocol)
    data = load_runs(dirs)
    payload = payload_of(build_html(data))
    cells = {(c["variant"], c["evaluator"]): c for c in payload["pivot"]["cells"]}
    anls = [cells[(label, "anls")] for label in data.labels]
    em = [cells[(label, "em")] for label in data.labels]
    assert [c["protocol"] for c in anls] == ["official", "lenient"]
    assert [c["mean_score"] for c in anls] == [0.75, 0.5]
    assert [c["rank"] for c in anls] == [None, None]
    assert [(c["protocol"], c["rank"], c["mean_score"]) for c in em] == [(None, 1, 0.5), (None, 1, 0.5)]
    board, _ = write_leaderboard(dirs, tmp_path / "board")
    _assert_cells(payload["pivot"]["cells"], board.select(PIVOT_COLUMNS).to_dicts())


def test_eight_variants_fit_a_1400px_window(tmp_path: Path, browser: Browser) -> None:
    from conftest import shape_png

    (tmp_path / "img.png").write_bytes(shape_png((200, 30, 30), 2, size=(640, 480)))
    long_word = "unbroken" * 30
    outputs = [[f"red circle {v} {long_word}" if (i + v) % 3 else f"big {v}" for i in range(6)] for v in range(8)]
    labels = [f"candidate.model=openai/gpt-4o-mini-2024-07-18-variant-{v} judge.temperature=0.{v}" for v in range(8)]
    dirs = _variant_runs(tmp_path, outputs, labels)
    page = write_report(dirs, tmp_path / "report.html")
    try:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        browser.open(page.resolve().as_uri())
        assert browser.js("document.querySelectorAll('table.pivot thead th').length") == 9
        assert (
            browser.js(
                "document.querySelectorAll('article.sample')[0].querySelectorAll('table.verdicts th[scope=col]').length"
            )
            == 9
        )
        # Every card's details opened too: still nothing wider than the window, no table that scrolls sideways.
        browser.js("document.querySelectorAll('details').forEach(d => d.open = true)")
        width = browser.js("[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        assert width[0] <= width[1] <= 1400, width
        overflowing = browser.js(
            "[...document.querySelectorAll('table.pivot, table.verdicts, .variant-grid, .evals')]"
            ".filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).length"
        )
        assert overflowing == 0
        assert browser.js("document.querySelectorAll('.per-variant.response .variant-grid > div').length") >= 8
        browser.screenshot(tmp_path / "eight.png")
    finally:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )


def test_runs_of_different_files_pair_on_id_and_content(tmp_path: Path, browser: Browser) -> None:
    """Two variants that read the same rows from files at different paths pair: one card per sample, verdicts
    compared. (Runs used to pair only when their dataset path was equal, and the page said "no sample changed".)"""
    never = {"never": {"type": "exact_match", "where": "output = 'red'"}}  # scores s0 in the first variant only
    dirs = _variant_runs(tmp_path, [["red", "big"], ["red circle big", "big"]], ["dataset=a", "dataset=b"], extra=never)
    info = json.loads((dirs[1] / "run.json").read_text())
    info["config"]["dataset"]["path"] = "other.jsonl"
    (dirs[1] / "run.json").write_text(json.dumps(info))
    payload = payload_of(build_html(load_runs(dirs)))
    assert [s["id"] for s in payload["samples"]] == ["s0", "s1"] and not any("key" in s for s in payload["samples"])
    assert all(len({r["run"] for r in s["results"]}) == 2 for s in payload["samples"])
    assert {s["id"]: s.get("changed") for s in payload["samples"]} == {"s0": ["exact", "words"], "s1": None}
    assert payload["pivot"]["changed"] == {"exact": 1, "words": 1}
    assert payload["pivot"]["compared"] == {"exact": 2, "words": 2, "never": 0}
    assert payload["pivot"]["pairing"]["sentence"] == "2 of 2 samples paired across variants (the same id and content)"
    browser.open(write_report(dirs, tmp_path / "report.html").resolve().as_uri())
    heads = browser.js("[...document.querySelectorAll('table.pivot tbody tr')].map(tr => tr.children[0].textContent)")
    assert "nevernot compared: no paired sample scored in two variants" in heads


def test_an_id_whose_content_differs_is_not_compared(tmp_path: Path, browser: Browser) -> None:
    """The same id with another expected output (or another image) in one variant is another sample: one card per
    content, never compared, and the page says how many were paired, differ, or are in one variant only."""
    from conftest import shape_png

    outputs = [["red", "big", "circle", "x"], ["red circle big", "big", "circle"]]
    dirs = _variant_runs(tmp_path, outputs, ["dataset=a", "dataset=b"], expected={(1, 1): "big"})
    (tmp_path / "img2.png").write_bytes(shape_png((30, 30, 200), 3))
    samples = pl.read_parquet(dirs[1] / "samples.parquet")
    image = samples["images"][2].to_list()
    image[0]["sha256"] = "0" * 64  # s2's image is another file's in the second variant
    pl.concat([samples.slice(0, 2), samples.slice(2, 1).with_columns(pl.Series("images", [image])), samples.slice(3)],
              how="vertical_relaxed").write_parquet(dirs[1] / "samples.parquet")  # fmt: skip
    payload = payload_of(build_html(load_runs(dirs)))
    cards = {s.get("key", s["id"]): s for s in payload["samples"]}
    assert sorted(cards) == ["1:s1", "1:s2", "2:s1", "2:s2", "s0", "s3"]
    for key in ("1:s1", "2:s1", "1:s2", "2:s2"):
        assert len({r["run"] for r in cards[key]["results"]}) == 1 and "changed" not in cards[key]
    assert cards["2:s1"]["expected"] == "big" and cards["1:s1"]["expected"] == "red circle big"
    assert cards["s0"]["changed"] == ["exact", "words"]
    pairing = payload["pivot"]["pairing"]
    assert (pairing["samples"], pairing["paired"], pairing["differ"], pairing["single"]) == (4, 1, 2, 1)
    assert pairing["differing"] == ["s1", "s2"]
    assert payload["pivot"]["compared"] == {"exact": 1, "words": 1}
    page = write_report(dirs, tmp_path / "report.html")
    browser.open(page.resolve().as_uri())
    assert browser.js("document.querySelector('.notice.pairing').textContent") == (
        "Pairing: 1 of 4 samples paired across variants (the same id and content); 2 share an id but differ in "
        "content (s1, s2): not compared, one card each; 1 in one variant only."
    )


def test_runs_over_different_datasets_are_not_compared(tmp_path: Path, browser: Browser) -> None:
    """Every id's content differs: nothing is compared, and the pivot says "not compared", never "no sample
    changed"."""
    dirs = _variant_runs(tmp_path, [["red", "big"], ["red", "big"]], ["dataset=a", "dataset=b"],
                         expected={(1, 0): "other", (1, 1): "other"})  # fmt: skip
    page = write_report(dirs, tmp_path / "report.html")
    payload = payload_of(page.read_text())
    assert sorted(s["key"] for s in payload["samples"]) == ["1:s0", "1:s1", "2:s0", "2:s1"]
    assert payload["pivot"]["compared"] == {"exact": 0, "words": 0} and payload["pivot"]["changed"] == {}
    browser.open(page.resolve().as_uri())
    heads = browser.js("[...document.querySelectorAll('table.pivot tbody tr')].map(tr => tr.children[0].textContent)")
    assert heads == ["wordsnot compared: no sample in two variants with the same content",
                     "exactnot compared: no sample in two variants with the same content"]  # fmt: skip
    assert "no sample changed" not in browser.js("document.body.innerText")


# ---------- big runs: bounded cards, every aggregate over all rows ----------


def big_result(rows: int, text_bytes: int = 300, failing_every: int = 7) -> ve.EvalResult:
    """A run of ``rows`` samples x two evaluators, built directly as frames (vectorized: fast at any size)."""
    base = pl.DataFrame({"i": pl.int_range(rows, eager=True)}).with_columns(pl.format("r{}", "i").alias("id"))
    index = pl.col("i")
    samples = base.select(
        "id",
        input=pl.lit("Question? " * 3),
        output=pl.lit("x" * text_bytes) + index.cast(pl.Utf8),
        expected_output=pl.lit("answer"),
        task=pl.when(index % 2 == 0).then(pl.lit("ocr")).otherwise(pl.lit("count")),
    )
    failed, error = index % failing_every == 0, index % 997 == 0
    results = [
        base.select(
            sample_id="id",
            evaluator=pl.lit(evaluator),
            type=pl.lit(kind),
            status=pl.when(error).then(pl.lit("error")).otherwise(pl.lit("processed")),
            score=pl.when(error).then(None).when(failed).then(0.0).otherwise((index % 10).cast(pl.Float64) / 9),
            passed=pl.when(~error).then(~failed),
            error=pl.when(error).then(pl.lit("reply could not be read")),
            details=pl.lit(json.dumps({"reasoning": "because " * 20})),
            threshold=pl.lit(0.5),
        )
        for evaluator, kind in (("exact", "exact_match"), ("judge", "llm_judge"))
    ]
    return ve.EvalResult(
        results=pl.concat(results),
        dimensions=pl.DataFrame(),
        fields=pl.DataFrame(),
        samples=samples,
        run_info={"run_id": "big"},
    )


def test_sampling_note_and_a_seeded_choice(tmp_path: Path, browser: Browser) -> None:
    result = big_result(300)
    limits = Limits(max_samples=50, max_failing=20, seed=3)
    payload = payload_of(build_html(result, limits=limits))
    bad = set(result.results.filter((pl.col("status") == "error") | ~pl.col("passed").fill_null(True))["sample_id"])
    shown = [s["id"] for s in payload["samples"]]
    assert len(shown) == 50 and len(bad) == 43
    assert sum(1 for s in shown if s in bad) == 20  # failing/error first, up to the cap; then the others
    assert payload["sampling"] == {"total": 300, "failing_total": 43, "failing_shown": 20, "failing_cap": 20,
                                   "others_total": 257, "others_shown": 30, "seed": 3, "shown": 50,
                                   "left_out_for_size": 0}  # fmt: skip
    # The same seed picks the same samples; another seed others. The overview covers every row either way.
    assert [s["id"] for s in payload_of(build_html(result, limits=limits))["samples"]] == shown
    other = payload_of(build_html(result, limits=Limits(max_samples=50, max_failing=20, seed=4)))
    assert {s["id"] for s in other["samples"]} - bad != set(shown) - bad
    assert {row["evaluator"]: row["rows"] for row in payload["summary"]} == {"exact": 300, "judge": 300}
    assert (
        sum(sum(h["counts"]) for h in payload["histograms"])
        == result.results.filter(pl.col("status") == "processed").height
    )

    page = write_report(result, tmp_path / "report.html", limits=limits)
    browser.open(page.resolve().as_uri())
    note = browser.js("document.querySelector('.notice.sampling').textContent")
    assert note.startswith(
        "Showing 50 of 300 samples: 20 of the 43 failing/error samples (at most 20), "
        "and a random sample of 30 of the other 257 (seed 3)."
    )
    assert _count(browser) == 50


def test_all_failing_rows_shown_when_under_the_cap(tmp_path: Path, browser: Browser) -> None:
    page = write_report(big_result(300), tmp_path / "report.html", limits=Limits(max_samples=100, max_failing=60))
    browser.open(page.resolve().as_uri())
    note = browser.js("document.querySelector('.notice.sampling').textContent")
    assert note.startswith(
        "Showing 100 of 300 samples: all 43 failing/error samples (up to 60), "
        "and a random sample of 57 of the other 257 (seed 0)."
    )


def test_a_200k_row_report_stays_under_the_size_cap() -> None:
    result = big_result(200_000, text_bytes=2_000)
    html = build_html(result)
    assert len(html.encode("utf-8")) < 10_000_000
    payload = payload_of(html)
    sampling = payload["sampling"]
    # 2 kB of text per card: the byte budget, not the count, ends the list; the failing ones were kept first.
    assert 1000 < sampling["shown"] < 3000 and sampling["left_out_for_size"] == 3000 - sampling["shown"]
    assert sampling["failing_shown"] == min(sampling["shown"], 2000)  # what the size cut leaves: failing ones first
    assert sampling["failing_shown"] + sampling["others_shown"] == sampling["shown"] == len(payload["samples"])
    assert (
        sampling["total"] == 200_000
        and sampling["failing_total"]
        == result.results.filter((pl.col("status") == "error") | ~pl.col("passed").fill_null(True))[
            "sample_id"
        ].n_unique()
    )
    assert {row["evaluator"]: row["rows"] for row in payload["summary"]} == {"exact": 200_000, "judge": 200_000}


def test_thumbnails_shrink_and_stop_at_their_budget(tmp_path: Path) -> None:
    from conftest import shape_png

    from vision_eval.report.thumbs import build_thumbnails

    refs = []
    for i in range(40):
        path = tmp_path / f"img{i}.png"
        path.write_bytes(shape_png((i * 6, 30, 200 - i * 4), 1 + i % 4, size=(640, 480)))
        refs.append([{"path": str(path), "sha256": f"h{i}", "source": "path", "error": None}])
    full = build_thumbnails(refs, 256)
    assert all(t.uri for t in full.values()) and max(t.width for t in full.values()) == 256
    budget = sum(len(t.uri) for t in full.values()) // 3
    small = build_thumbnails(refs, 256, budget=budget)
    made = [t for t in small.values() if t.uri]
    assert made and max(t.width for t in made) < 256  # smaller thumbnails so that more fit
    assert sum(len(t.uri) for t in made) <= budget
    left = [t for t in small.values() if not t.uri]
    assert all("at most" in (t.error or "") for t in left)


def test_verdicts_and_the_counted_bootstrap() -> None:
    frame = pl.DataFrame(
        {
            "status": ["processed", "processed", "processed", "error", "skipped"],
            "passed": [True, False, None, None, None],
        }
    )
    codes = frame.select(verdict()).to_series().to_list()
    assert [VERDICTS[c] if c is not None else None for c in codes] == ["passed", "failed", "processed", "error", None]
    # Resampling drawn as counts of each distinct score: the same interval as the textbook one for a proportion.
    values = (pl.int_range(4000, eager=True) % 5 < 3).cast(pl.Float64).to_numpy()
    low, high = bootstrap_interval(values)
    sd = (0.6 * 0.4 / 4000) ** 0.5
    half = 1.96 * sd
    tolerance = 0.0012  # 1,000 resamples; a 90% interval (1.645 sd) would be twice this further in on each side
    assert (1.96 - 1.645) * sd > 2 * tolerance
    assert low == pytest.approx(0.6 - half, abs=tolerance) and high == pytest.approx(0.6 + half, abs=tolerance)


def test_cards_are_chosen_by_position_only_when_the_results_align_with_the_samples() -> None:
    """One run's failing samples are read as a bit per position, which holds only when each evaluator's results are
    one row per sample in the samples' order: a swapped or missing row sends the choice to the by-key path."""
    from vision_eval.report.selection import select_by_key, select_by_position, with_keys

    n = 60
    ids = [f"s{i:02d}" for i in range(n)]
    samples = with_keys(pl.LazyFrame({"id": ids}), None, "id")
    passed = {"a": [i % 3 != 0 for i in range(n)], "b": [i % 5 != 0 for i in range(n)]}
    rows = pl.DataFrame(
        {
            "sample_id": ids * 2,
            "evaluator": ["a"] * n + ["b"] * n,
            "status": ["processed"] * (2 * n),
            "passed": passed["a"] + passed["b"],
        }
    )
    limits = Limits(max_samples=20, max_failing=12, seed=3)
    failing = [i for i in range(n) if i % 3 == 0 or i % 5 == 0]
    by_key = select_by_key(samples, with_keys(rows.lazy(), None), False, limits)
    by_position = select_by_position(samples, with_keys(rows.lazy(), None), limits)
    assert by_position is not None
    for chosen in (by_key, by_position):
        assert chosen.failing_total == len(failing) and chosen.failing_shown == 12 and chosen.total == n
        assert chosen.keys["_key"].head(12).to_list() == [ids[i] for i in failing[:12]]
    swapped = rows.with_columns(
        pl.when(pl.int_range(pl.len()) == n + 3).then(pl.lit(ids[4])).when(pl.int_range(pl.len()) == n + 4)
        .then(pl.lit(ids[3])).otherwise(pl.col("sample_id")).alias("sample_id")
    )  # fmt: skip
    assert select_by_position(samples, with_keys(swapped.lazy(), None), limits) is None
    missing = rows.filter(pl.int_range(pl.len()) != n + 7)
    assert select_by_position(samples, with_keys(missing.lazy(), None), limits) is None
