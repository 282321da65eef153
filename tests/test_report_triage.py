"""The report shows what went wrong first, checked in headless Chromium: error and failing cards first, the evaluators
that skipped a sample folded into one line, one evaluator's box under an evaluator filter, a benchmark metric's
verdict explained without a click, and in a sweep report of the shipped demo (4 variants, 21 evaluators) the first
failing card within the first 2,000 px."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser

import vision_eval as ve
from vision_eval.report import write_report

THRESHOLDS = ("0.5", "0.7", "0.9", "0.95")
# relaxed_accuracy reads "I can see 7 green triangles." whole: not a number, so it fails against the reference 7.
COUNT_3_WHY = 'read "i can see 7 green triangles." \u2192 not a number; reference 7'


def _top(chrome: Browser, selector: str) -> float | None:
    return chrome.js(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
        " return e ? e.getBoundingClientRect().top + scrollY : null; })()"
    )


def _cards(chrome: Browser) -> list[dict[str, Any]]:
    """Each card on the page, in order: its id and whether it shows a failed or error verdict."""
    return chrome.js(
        "[...document.querySelectorAll('article.sample')].map(a => ({id: a.dataset.sampleId,"
        " bad: !!a.querySelector('.badge.st-failed, .badge.st-error')}))"
    )


@pytest.fixture(scope="module")
def demo_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped demo as a user sweeps it (`vision-eval -m`, 4 thresholds), a benchmark metric added to its stack,
    then `vision-eval-report` on the sweep folder."""
    from conftest import REPO

    root = tmp_path_factory.mktemp("demo-sweep")
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "vision_eval.cli", "-m", f"evaluators.ocr_text.threshold={','.join(THRESHOLDS)}",
               "+evaluators.count_number.type=relaxed_accuracy", "+evaluators.count_number.where=\"task = 'count'\"",
               "run.write_report=false", "hydra.sweep.dir=sweep"]  # fmt: skip
    run = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = subprocess.run([sys.executable, "-m", "vision_eval.report.cli", "sweep"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    return root / "sweep" / "report.html"


def test_a_sweep_report_shows_a_failing_card_within_the_first_2000_px(demo_sweep: Path, browser: Browser) -> None:
    browser.open(demo_sweep.resolve().as_uri())
    assert browser.js("document.body.dataset.ready") == "true"
    assert browser.js("document.querySelectorAll('table.pivot thead th').length") == 1 + len(THRESHOLDS)
    cards = _cards(browser)
    assert len(cards) == 29 and cards[0]["bad"]
    bad = [card["bad"] for card in cards]
    assert bad == sorted(bad, reverse=True)  # every failing card before every passing one
    first = _top(browser, "article.sample")
    assert first is not None and first < 2000, first
    # The long per-variant tables and the 4 x 8 histograms are one click away, not in the way.
    assert browser.js("[...document.querySelectorAll('figure.hist')].filter(f => f.checkVisibility()).length") == 0
    assert browser.js("document.querySelectorAll('figure.hist').length") == 4 * 8  # the evaluators that scored rows
    assert "describe_judge" in browser.js("document.querySelector('#overview .unscored').textContent")


def test_a_sweep_card_folds_what_every_variant_skipped_and_explains_a_benchmark_verdict(
    demo_sweep: Path, browser: Browser
) -> None:
    browser.open(demo_sweep.resolve().as_uri())
    card = "document.querySelector('article.sample[data-sample-id=\"count-3\"]')"
    rows = browser.js(
        f"[...{card}.querySelectorAll('table.verdicts tbody tr:not(.why-row)')].map(r => r.dataset.evaluator)"
    )
    assert sorted(rows) == ["count_number", "object_counts"]  # the 19 evaluators that skipped it are one line
    folded = browser.js(f"{card}.querySelector('details.skipped-evals > summary').textContent")
    assert "skipped in every variant by 19 evaluators" in folded and "describe_judge" in folded
    why = browser.js(f"{card}.querySelector('tr.why-row[data-evaluator=\"count_number\"]').textContent")
    assert why == COUNT_3_WHY  # once: every variant read the same
    # Filtered to the benchmark metric: its box only, on the count rows only.
    browser.open(demo_sweep.resolve().as_uri() + "#evaluator=count_number")
    boxes = browser.js("[...document.querySelectorAll('details.compare-evals')].map(d => d.dataset.evaluator)")
    assert boxes == ["count_number"] * 5
    assert browser.js("document.querySelectorAll('details.skipped-evals').length") == 0


ROWS = [
    {"id": "r0", "task": "count", "output": "3", "expected_output": "3"},
    {"id": "r1", "task": "count", "output": "The answer is 22.", "expected_output": "22"},
    {"id": "r2", "task": "ocr", "output": "hello", "expected_output": "hello"},
    {"id": "r3", "task": "count", "output": "no idea", "expected_output": "4"},
    {"id": "r4", "task": "ocr", "output": "world", "expected_output": "word"},
]
STACK = {
    "count": {"type": "exact_count", "protocol": "lenient", "where": "task = 'count'", "max_error_rate": 1},
    "number": {"type": "relaxed_accuracy", "where": "task = 'count'"},
    "ocr": {"type": "exact_match", "where": "task = 'ocr'"},
}


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = ve.evaluate(ROWS, evaluators=STACK, run={"progress": False})
    return write_report(result, tmp_path_factory.mktemp("triage") / "report.html")


def test_cards_put_errors_then_failures_first(single: Path, browser: Browser) -> None:
    browser.open(single.resolve().as_uri())
    # r3 errs (no count in "no idea"), r1 and r4 fail, r0 and r2 pass: errors, failures, the rest, each in order.
    assert [card["id"] for card in _cards(browser)] == ["r3", "r1", "r4", "r0", "r2"]
    browser.open(single.resolve().as_uri() + "#sort=order")
    assert [card["id"] for card in _cards(browser)] == ["r0", "r1", "r2", "r3", "r4"]
    # Under an evaluator filter, that evaluator's verdicts decide the order.
    browser.open(single.resolve().as_uri() + "#evaluator=number")
    assert [card["id"] for card in _cards(browser)] == ["r1", "r3", "r0"]


def test_skipped_evaluators_fold_into_one_line_and_a_filter_shows_one_box(single: Path, browser: Browser) -> None:
    browser.open(single.resolve().as_uri())
    card = "document.querySelector('article.sample[data-sample-id=\"r1\"]')"
    boxes = browser.js(f"[...{card}.querySelectorAll('section.eval')].map(s => s.dataset.evaluator)")
    assert boxes == ["count", "number"] or boxes == ["number", "count"]
    assert browser.js(f"{card}.querySelector('details.skipped-evals > summary').textContent").endswith(
        "skipped by 1 evaluator ocr"
    )
    # Opened, the fold shows why and the skipped box itself.
    browser.js(f"{card}.querySelector('details.skipped-evals').open = true")
    browser.js("new Promise(r => setTimeout(r, 50))")
    assert "row not selected by where: task = 'ocr'" in browser.js(f"{card}.querySelector('.skipped-body').textContent")
    assert browser.js(f"{card}.querySelectorAll('.skipped-body section.eval[data-status=\"skipped\"]').length") == 1
    browser.open(single.resolve().as_uri() + "#evaluator=number")
    shown = browser.js("[...document.querySelectorAll('section.eval')].map(s => s.dataset.evaluator)")
    assert shown == ["number"] * 3


def test_a_benchmark_box_says_why_without_a_click(single: Path, browser: Browser) -> None:
    browser.open(single.resolve().as_uri())
    card = "document.querySelector('article.sample[data-sample-id=\"r1\"]')"
    why = browser.js(f"{card}.querySelector('section.eval[data-evaluator=\"number\"] .why').textContent")
    assert why == 'read "the answer is 22." \u2192 not a number; reference 22'
    lenient = browser.js(f"{card}.querySelector('section.eval[data-evaluator=\"count\"] .why').textContent")
    assert lenient == "read 22; reference 22"  # the lenient count reads the number out of the sentence: a pass
    error = 'document.querySelector(\'article.sample[data-sample-id="r3"] section.eval[data-evaluator="count"]\')'
    assert (
        browser.js(f"{error}.querySelector('.why').textContent") == 'read "no idea" \u2192 no number found; reference 4'
    )
    assert browser.js(f"{card}.querySelector('section.eval[data-evaluator=\"number\"] .why').checkVisibility()") is True
