"""The HTML report: self-contained, escaped, built from results or run dirs, and working in a real browser."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
import time
from datetime import date
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from chromium import Browser

import vision_eval as ve
from vision_eval.report import build_html, from_result, load_runs, script_json, write_report
from vision_eval.report.cli import main as report_main

XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
BREAKOUT = "</script><script>window.__pwned=3</script>\u2028&amp;"
EVALUATORS = {
    "exact": {"type": "exact_match"},
    "has_circle": {"type": "contains", "value": ["circle", "red"], "where": "task = 'count'"},
}


def _png(path: Path, colour: str, size: tuple[int, int] = (400, 300)) -> Path:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).ellipse((40, 40, 180, 180), fill=colour)
    image.save(path)
    return path


def demo_rows(folder: Path, n: int = 60) -> list[dict[str, Any]]:
    """n ordinary rows over three images, an XSS row with a missing second image, and a row without output."""
    images = [_png(folder / f"img{i}.png", c) for i, c in enumerate(("red", "green", "blue"))]
    rows = [
        {
            "id": f"s{i:03d}",
            "task": "count" if i % 2 else "ocr",
            "input": f"How many circles? ({i})",
            "output": "one red circle" if i % 3 == 0 else f"answer {i % 4}",
            "expected_output": "one red circle" if i % 3 == 0 else f"answer {i % 5}",
            "images": [str(images[i % 3])],
        }
        for i in range(n)
    ]
    rows.append(
        {
            "id": "xss",
            "task": "count",
            "input": BREAKOUT,
            "output": XSS,
            "expected_output": "</script><b>bold</b>",
            "images": [str(images[0]), str(folder / "missing.png")],
        }
    )
    rows.append({"id": "no-output", "task": "ocr", "input": "q", "output": None, "expected_output": "x", "images": []})
    return rows


def payload_of(html: str) -> dict[str, Any]:
    """The JSON data block of a report page."""
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert match, "no data block"
    return json.loads(match.group(1))


class _Attrs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[ve.EvalResult, Path]:
    folder = tmp_path_factory.mktemp("demo")
    result = ve.evaluate(demo_rows(folder), evaluators=EVALUATORS)
    return result, folder


@pytest.fixture(scope="module")
def demo_html(demo: tuple[ve.EvalResult, Path]) -> str:
    return build_html(demo[0], thumb_size=128)


# ---------- the page itself ----------


def test_page_is_self_contained(demo_html: str) -> None:
    parser = _Attrs()
    parser.feed(demo_html)
    urls = [(tag, a.get("src") or a.get("href")) for tag, a in parser.tags if a.get("src") or a.get("href")]
    assert not [u for u in urls if re.match(r"(?i)\s*(https?:)?//", u[1] or "")], urls
    assert not [t for t, a in parser.tags if t == "link" or (t == "script" and a.get("src"))]
    assert "default-src 'none'" in demo_html  # CSP: the browser refuses any fetch the page might attempt
    payload = payload_of(demo_html)
    assert payload["thumbs"] and all(uri.startswith("data:image/") for uri in payload["thumbs"].values())


def test_dataset_text_cannot_break_out_of_the_data_block(demo_html: str) -> None:
    # Exactly two script elements close: the data block and the page's own code.
    assert demo_html.lower().count("</script") == 2
    assert "window.__pwned" not in demo_html.split('id="report-data">', 1)[0]
    block = demo_html.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and ">" not in block and "&" not in block and "\u2028" not in block
    samples = {s["id"]: s for s in payload_of(demo_html)["samples"]}
    assert samples["xss"]["output"] == XSS
    assert samples["xss"]["input"] == BREAKOUT
    assert samples["xss"]["expected"] == "</script><b>bold</b>"


def test_script_json_round_trips_and_escapes() -> None:
    value = {"a": "</script><!-- & \u2028 \u2029 >", "n": [1, 2.5, None], "é": "ü"}
    text = script_json(value)
    assert json.loads(text) == value
    assert not set("<>&\u2028\u2029") & set(text)


def test_title_is_escaped(demo: tuple[ve.EvalResult, Path]) -> None:
    html = build_html(demo[0], title="<b>run</b>", thumb_size=64)
    assert "<title>&lt;b&gt;run&lt;/b&gt;</title>" in html


# ---------- the data ----------


def test_payload_samples_results_and_images(demo: tuple[ve.EvalResult, Path], demo_html: str) -> None:
    from PIL import Image

    payload = payload_of(demo_html)
    samples = {s["id"]: s for s in payload["samples"]}
    assert len(samples) == 62
    assert payload["evaluators"] == ["exact", "has_circle"]
    # Three distinct image files -> three thumbnails, each downscaled to at most 128 px.
    assert len(payload["thumbs"]) == 3
    for uri in payload["thumbs"].values():
        image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
        assert max(image.size) == 128 and image.format == "JPEG"
    xss_images = samples["xss"]["images"]
    assert xss_images[0]["key"] in payload["thumbs"]
    assert "key" not in xss_images[1] and "image file not found" in xss_images[1]["error"]
    # Per evaluator results with status, score and reasons.
    s000 = {r["evaluator"]: r for r in samples["s000"]["results"]}
    assert s000["exact"]["status"] == "processed" and s000["exact"]["score"] == 1.0 and s000["exact"]["passed"]
    assert s000["has_circle"]["status"] == "skipped" and "task = 'count'" in s000["has_circle"]["details"]
    errors = {r["evaluator"]: r for r in samples["no-output"]["results"]}
    assert errors["exact"]["status"] == "error" and errors["exact"]["error"]
    assert samples["s001"]["meta"] == {"task": "count"}


def test_overview_summary_and_histograms(demo: tuple[ve.EvalResult, Path], demo_html: str) -> None:
    payload = payload_of(demo_html)
    summary = {row["evaluator"]: row for row in payload["summary"]}
    expected = demo[0].summary.filter(pl.col("evaluator") == "exact").row(0, named=True)
    assert summary["exact"]["mean_score"] == pytest.approx(expected["mean_score"])
    assert summary["exact"]["errors"] == 1 and summary["exact"]["processed"] == 61
    hists = {h["evaluator"]: h["counts"] for h in payload["histograms"]}
    # exact is 0/1: i % 3 == 0 rows match (20 of 60) plus i % 4 == i % 5 (i % 20 in 0..3, not multiples of 3).
    ones = sum(1 for i in range(60) if i % 3 == 0 or i % 4 == i % 5)
    assert hists["exact"][9] == ones and hists["exact"][0] == 61 - ones and sum(hists["exact"][1:9]) == 0
    # has_circle on count rows (odd i and xss): "one red circle" contains both values (score 1).
    odd_circles = sum(1 for i in range(1, 60, 2) if i % 3 == 0)
    assert hists["has_circle"][9] == odd_circles
    assert sum(hists["has_circle"]) == 31


def test_overview_summary_is_the_runs_summary_and_histograms_count_every_score() -> None:
    """The overview's numbers come from a few grouped cells, not from the rows: they must be what ``summarize``
    computes over the rows, for every status, null passed, unknown costs and scores on bin edges."""
    from vision_eval.report.aggregates import overview
    from vision_eval.summary import summarize

    n = 40
    results = pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)] * 2,
            "evaluator": ["a"] * n + ["b"] * n,
            "type": ["exact_match"] * n + ["llm_judge"] * n,
            "status": [["processed", "error", "skipped", "processed"][i % 4] for i in range(2 * n)],
            "score": [None if i % 9 == 0 else (i % 11) / 10 for i in range(2 * n)],
            "passed": [None if i % 7 == 0 else i % 3 == 0 for i in range(2 * n)],
            "input_tokens": [None] * n + list(range(n)),
            "output_tokens": [None] * n + [2] * n,
            "cost_usd": [None] * n + [None if i % 5 else 0.001 * i for i in range(n)],
            "threshold": [0.5] * n + [None] * n,
        }
    )
    result = ve.EvalResult(results, pl.DataFrame(), pl.DataFrame(), pl.DataFrame({"id": [f"s{i}" for i in range(n)]}))
    data = from_result(result)
    got = overview(data.results, data.dimensions, [""])
    expected = summarize(result.results).to_dicts()
    rows = [{k: v for k, v in row.items() if k not in ("run", "threshold")} for row in got["summary"]]
    assert [row.keys() for row in rows] == [row.keys() for row in expected]
    for row, want in zip(rows, expected):
        assert row == pytest.approx(want, nan_ok=True), row["evaluator"]
    assert [row["threshold"] for row in got["summary"]] == [0.5, None]
    for evaluator, counts in ((h["evaluator"], h["counts"]) for h in got["histograms"]):
        scores = result.results.filter(
            (pl.col("evaluator") == evaluator) & (pl.col("status") == "processed") & pl.col("score").is_not_null()
        )["score"]
        assert counts == [sum(1 for s in scores if min(int(s * 10), 9) == k) for k in range(10)]
    assert got["evaluators"] == ["a", "b"]


def test_card_fields_long_texts_and_metadata_of_any_type() -> None:
    """A card shows texts cut at TEXT_LIMIT (saying how much was cut) and metadata of any type as text, as JSON
    writes it; a missing value is left out."""
    from vision_eval.report.cards import TEXT_LIMIT

    long = "x" * (TEXT_LIMIT + 7)
    samples = pl.DataFrame(
        {
            "id": ["a", "b"],
            "output": [long, "short"],
            "expected_output": ["e", None],
            "notes": [long, None],
            "count": [3, None],
            "tags": [["red", "é"], None],
            "box": [{"x": 1.5, "label": "cat"}, None],
            "day": [date(2024, 5, 1), None],
        }
    )
    results = pl.DataFrame(
        {"sample_id": ["a", "b"], "evaluator": ["e", "e"], "type": ["exact_match"] * 2, "status": ["processed"] * 2}
    )
    cards = {
        c["id"]: c
        for c in payload_of(build_html(ve.EvalResult(results, pl.DataFrame(), pl.DataFrame(), samples)))["samples"]
    }
    cut = "x" * TEXT_LIMIT + "\n[... 7 more characters not shown]"
    assert cards["a"]["output"] == cut and cards["a"]["expected"] == "e"
    assert cards["a"]["meta"] == {
        "notes": cut,
        "count": "3",
        "tags": '["red", "é"]',
        "box": '{"x": 1.5, "label": "cat"}',
        "day": '"2024-05-01"',
    }
    assert "meta" not in cards["b"] and "expected" not in cards["b"] and cards["b"]["output"] == "short"
    assert [r["evaluator"] for r in cards["b"]["results"]] == ["e"]


def judge_like_result() -> ve.EvalResult:
    """Frames as a judge or field_accuracy writes them (built directly: those evaluators live elsewhere)."""
    details = {  # the llm_judge layout: the judge's own lists nested under details.details
        "scores": {"accuracy": 0.2, "completeness": 0.8},
        "reasoning": "The cat is <b>not</b> there.",
        "details": {
            "hallucinations": ["cat"],
            "missing_elements": [],
            "TOP_ISSUE": {"problem": "invented a cat", "severity": "major", "fix": "look again"},
        },
    }
    return ve.EvalResult(
        results=pl.DataFrame(
            {
                "sample_id": ["a"],
                "evaluator": ["judge"],
                "type": ["vision_judge"],
                "status": ["processed"],
                "score": [0.4],
                "passed": [False],
                "details": [json.dumps(details)],
                "input_tokens": [120],
                "cost_usd": [0.0012],
            }
        ),
        dimensions=pl.DataFrame(
            {
                "sample_id": ["a", "a"],
                "evaluator": ["judge"] * 2,
                "dimension": ["accuracy", "completeness"],
                "score": [0.2, 0.8],
                "weight": [0.5, 0.5],
            }
        ),
        fields=pl.DataFrame(
            {
                "sample_id": ["a"],
                "evaluator": ["judge"],
                "path": ["total"],
                "match": ["numeric"],
                "expected": ["10"],
                "actual": ["12"],
                "score": [0.0],
                "hit": [False],
                "reason": ["off by 20%"],
            }
        ),
        samples=pl.DataFrame({"id": ["a"], "output": ["a cat"]}),
    )


def test_fields_dimensions_and_judge_details_are_embedded() -> None:
    payload = payload_of(build_html(judge_like_result()))
    entry = payload["samples"][0]["results"][0]
    assert [d["dimension"] for d in entry["dimensions"]] == ["accuracy", "completeness"]
    assert entry["fields"][0]["reason"] == "off by 20%" and entry["fields"][0]["hit"] is False
    assert json.loads(entry["details"])["details"]["TOP_ISSUE"]["severity"] == "major"
    assert payload["summary"][0]["cost_usd"] == pytest.approx(0.0012)
    assert {d["dimension"]: d["mean_score"] for d in payload["dimensions"]} == {"accuracy": 0.2, "completeness": 0.8}


# ---------- runs on disk ----------


def test_every_run_writes_a_report_unless_disabled(tmp_path: Path) -> None:
    rows = demo_rows(tmp_path, n=4)
    out = tmp_path / "run"
    ve.evaluate(rows, evaluators=EVALUATORS, output_dir=out)
    assert (out / "report.html").is_file() and (out / "results.parquet").is_file()
    assert len(payload_of((out / "report.html").read_text())["samples"]) == 6
    off = tmp_path / "off"
    ve.evaluate(rows, evaluators=EVALUATORS, output_dir=off, run={"write_report": False})
    assert (off / "results.parquet").is_file() and not (off / "report.html").exists()


def test_the_report_reads_a_written_run_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A written run holds its frames as scans: the report reads them in streaming passes and never loads them whole
    (which a run larger than memory could not afford), and still shows every sample."""
    from vision_eval.output import EvalResult

    out = tmp_path / "run"
    result = ve.evaluate(demo_rows(tmp_path, n=8), evaluators=EVALUATORS, output_dir=out, run={"write_report": False})
    loaded: list[str] = []
    read_whole = EvalResult._get
    monkeypatch.setattr(EvalResult, "_get", lambda self, name: loaded.append(name) or read_whole(self, name))
    page = write_report(result, out)
    assert loaded == []
    assert {s["id"] for s in payload_of(page.read_text())["samples"]} == {f"s{i:03d}" for i in range(8)} | {
        "xss",
        "no-output",
    }


def test_a_failing_report_keeps_the_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vision_eval.report as report

    def broken(*args: Any, **kwargs: Any) -> Path:
        raise RuntimeError("disk full")

    monkeypatch.setattr(report, "write_report", broken)
    result = ve.evaluate(demo_rows(tmp_path, n=3), evaluators=EVALUATORS)
    with pytest.warns(UserWarning, match="report.html not written: RuntimeError: disk full"):
        result.write(tmp_path / "run")
    assert pl.read_parquet(tmp_path / "run" / "results.parquet").height == result.results.height


def test_shards_are_concatenated_into_one_run(tmp_path: Path) -> None:
    rows = demo_rows(tmp_path, n=10)
    for i in range(2):
        ve.evaluate(rows, evaluators=EVALUATORS, output_dir=tmp_path / "sweep" / f"shard{i}", run={"shard": f"{i}/2"})
    data = load_runs(sorted((tmp_path / "sweep").iterdir()))
    assert data.labels == [""]  # shards of one run: one group, no run label
    payload = payload_of(build_html(data))
    assert sorted(s["id"] for s in payload["samples"]) == sorted(r["id"] for r in rows)
    assert sum(row["rows"] for row in payload["summary"] if row["evaluator"] == "exact") == 12


def test_cli_multirun_labels_and_leaderboard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = demo_rows(tmp_path, n=6)
    sweep = tmp_path / "multirun"
    for i, threshold in enumerate((0.5, 1.0)):
        stack = {"exact": {"type": "exact_match", "threshold": threshold}}
        ve.evaluate(rows, evaluators=stack, output_dir=sweep / str(i), run={"write_report": False})
        (sweep / str(i) / ".hydra").mkdir()
        (sweep / str(i) / ".hydra" / "overrides.yaml").write_text(
            f"- evaluators.exact.threshold={threshold}\n- run.shard=0/1\n- candidate=x\n"
        )
    # A batch checkpoint inside a run holds a results file too; it is not a run of its own.
    (sweep / "1" / "checkpoint" / "exact" / "abc").mkdir(parents=True)
    shutil.copy(sweep / "1" / "results.parquet", sweep / "1" / "checkpoint" / "exact" / "abc" / "results.parquet")
    assert report_main([str(sweep)]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "| exact |" in printed  # the leaderboard, as Markdown
    payload = payload_of((sweep / "report.html").read_text())
    assert payload["labels"] == ["evaluators.exact.threshold=0.5", "evaluators.exact.threshold=1.0"]
    assert len(payload["samples"]) == 8  # one card per sample, with both variants' verdicts
    assert all(sorted(r["run"] for r in s["results"]) == payload["labels"] for s in payload["samples"])
    board = pl.read_parquet(sweep / "leaderboard.parquet")
    assert sorted(board["variant"]) == ["evaluators.exact.threshold=0.5", "evaluators.exact.threshold=1.0"]
    assert payload["leaderboard"]["columns"][:4] == ["candidate", "judge", "variant", "evaluator"]
    assert len(payload["leaderboard"]["rows"]) == 2
    # A glob of Parquet files names the same runs; -o chooses the file.
    assert report_main([str(sweep / "*" / "results.parquet"), "-o", str(tmp_path / "glob.html")]) == 0
    assert len(payload_of((tmp_path / "glob.html").read_text())["samples"]) == 8
    assert report_main([str(tmp_path / "nothing-here")]) == 2


# ---------- a real browser ----------


def _count(chrome: Browser) -> dict[str, int]:
    values = chrome.js(
        "(() => { const c = document.getElementById('match-count'); return {count: +c.dataset.count,"
        " total: +c.dataset.total, cards: document.querySelectorAll('article.sample').length}; })()"
    )
    return {k: int(v) for k, v in values.items()}


def test_report_in_headless_chromium(browser: Browser, demo: tuple[ve.EvalResult, Path], tmp_path: Path) -> None:
    result, _ = demo
    page = write_report(result, tmp_path / "report.html", thumb_size=160)
    url = page.resolve().as_uri()
    browser.open(url)
    assert browser.js("document.body.dataset.ready") == "true"
    assert _count(browser) == {"count": 62, "total": 62, "cards": 50}  # paginated: 50 per page
    assert browser.js("document.querySelectorAll('#overview svg rect.hbar').length") == 20
    assert browser.js("[...document.images].every(i => i.src.startsWith('data:image/'))")
    # Next page: the remaining 12 cards.
    browser.js("[...document.querySelectorAll('nav.pager button')].find(b => b.textContent.startsWith('Next')).click()")
    assert _count(browser)["cards"] == 12

    # A filter through the hash: only the sample whose exact_match errored.
    browser.open(url + "#status=error&evaluator=exact")
    assert _count(browser) == {"count": 1, "total": 62, "cards": 1}
    assert browser.js("document.querySelector('article.sample').dataset.sampleId") == "no-output"
    assert browser.js("document.getElementById('f-status').value") == "error"

    # Typing into the search box (real input events) narrows to the XSS row, whose text is shown, not run.
    browser.open(url)
    browser.js("document.getElementById('f-q').focus()")
    browser.send("Input.insertText", {"text": "pwned"}, session=True)
    deadline = time.monotonic() + 5
    while _count(browser)["count"] != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _count(browser) == {"count": 1, "total": 62, "cards": 1}
    assert browser.js("typeof window.__pwned") == "undefined"
    assert browser.js("document.querySelectorAll('#sample-list script, #sample-list img[src=\"x\"]').length") == 0
    assert browser.js("document.querySelector('article.sample .response pre').textContent") == XSS
    assert browser.js("document.querySelector('article.sample').textContent").count("</script><b>bold</b>") == 1
    assert "image file not found" in browser.js("document.querySelector('figure.thumb.missing').textContent")
    assert "#q=pwned" in browser.js("location.hash")

    # One evaluator: the rows it skipped are hidden unless the status filter asks for them; a score range.
    browser.open(url + "#evaluator=has_circle")
    assert _count(browser)["count"] == 31
    browser.open(url + "#evaluator=has_circle&status=skipped")
    assert _count(browser)["count"] == 31
    browser.open(url + "#evaluator=exact&min=0.5&max=1")
    assert (
        _count(browser)["count"]
        == result.results.filter((pl.col("evaluator") == "exact") & (pl.col("score") >= 0.5)).height
    )

    # Failed-only, sorted by score: the failing count rows of has_circle, lowest score first.
    browser.open(url + "#evaluator=has_circle&outcome=failed&sort=score-asc")
    failing = result.results.filter(
        (pl.col("evaluator") == "has_circle") & (pl.col("status") == "processed") & ~pl.col("passed")
    )
    assert _count(browser)["count"] == failing.height > 0
    shown = browser.js(
        "[...document.querySelectorAll('article.sample')].map(a => a.querySelector('section.eval').dataset.evaluator)"
    )
    assert set(shown) == {"has_circle"}  # the selected evaluator's verdict comes first in each card

    browser.open(url + "#q=xss")
    shot = browser.screenshot(tmp_path / "report.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_judge_verdict_in_headless_chromium(browser: Browser, tmp_path: Path) -> None:
    page = write_report(judge_like_result(), tmp_path / "judge.html")
    browser.open(page.resolve().as_uri())
    card = "document.querySelector('section.eval')"
    assert browser.js(f"{card}.querySelector('.reasoning p').textContent") == "The cat is <b>not</b> there."
    assert browser.js(f"{card}.querySelectorAll('b').length") == 0
    assert browser.js(f"{card}.querySelector('.hallucinations li').textContent") == "cat"
    assert browser.js(f"{card}.querySelector('.missing_elements').textContent") == "Missing elements (0)(none)"
    assert "Severity: major" in browser.js(f"{card}.querySelector('.top-issue').textContent")
    assert browser.js(f"{card}.querySelectorAll('.dim-list li .bar').length") == 2
    assert browser.js(f"{card}.querySelector('.fields-table tbody tr').textContent") == (
        "totalnumeric10120.000✗ missoff by 20%"
    )
    assert browser.js(f"{card}.querySelector('.badge').textContent") == "✗ failed"
    assert "cost $0.0012" in browser.js(f"{card}.querySelector('.facts').textContent")
    # What is not shown above stays available under "All details" (the nested lists were moved out).
    assert (
        browser.js(f"{card}.querySelector('details.more').textContent")
        == "All detailsscoresaccuracy0.2000completeness0.8000"
    )
    browser.screenshot(tmp_path / "judge.png")


def test_max_samples_limits_cards_not_the_overview(demo: tuple[ve.EvalResult, Path]) -> None:
    payload = payload_of(build_html(demo[0], thumb_size=32, max_samples=10))
    results = demo[0].results
    failing = results.filter((pl.col("status") == "error") | (pl.col("passed") == False))  # noqa: E712
    ids = [s["id"] for s in payload["samples"]]
    assert len(ids) == 10 and set(ids) <= set(failing["sample_id"])  # failing and error samples first
    assert ids == sorted(ids, key=[str(i) for i in demo[0].samples["id"]].index)  # shown in dataset order
    assert all(len(s["results"]) == 2 for s in payload["samples"])
    assert payload["total_samples"] == 62 and payload["sampling"]["failing_total"] == failing["sample_id"].n_unique()
    assert {row["evaluator"]: row["rows"] for row in payload["summary"]} == {"exact": 62, "has_circle": 62}
    assert sum(sum(h["counts"]) for h in payload["histograms"]) == 61 + 31
    shown_images = {image["key"] for s in payload["samples"] for image in s.get("images", []) if "key" in image}
    assert set(payload["thumbs"]) == shown_images  # thumbnails only for the cards shown


def test_thumbnails_formats_and_failures(tmp_path: Path) -> None:
    from PIL import Image

    from vision_eval.report.thumbs import image_entries, thumbnail

    Image.new("RGBA", (600, 200), (0, 0, 255, 128)).save(tmp_path / "alpha.png")
    thumb = thumbnail(str(tmp_path / "alpha.png"), max_side=120)
    assert thumb.uri.startswith("data:image/png;base64,") and (thumb.width, thumb.height) == (120, 40)
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    broken = thumbnail(str(tmp_path / "broken.jpg"))
    assert broken.uri is None and broken.error == "cannot read image broken.jpg: UnidentifiedImageError"
    refs = [
        {"path": None, "sha256": "ab", "source": "bytes", "error": None},
        {"path": "https://example.com/a.png", "sha256": None, "source": "url", "error": None},
        {"path": str(tmp_path / "broken.jpg"), "sha256": "cd", "source": "path", "error": None},
    ]
    entries = image_entries(refs, {"cd": broken})
    assert [e.get("key") for e in entries] == [None, None, None]
    assert "not stored with the results (source: bytes)" in entries[0]["error"]
    assert "no network requests" in entries[1]["error"]
    assert entries[2]["error"] == broken.error and entries[2]["name"] == "broken.jpg"


def test_a_crafted_run_directory_cannot_make_the_report_embed_another_local_file(tmp_path: Path) -> None:
    """samples.parquet is data: a run directory from someone else may name any local path. The report embeds an
    image only when its bytes hash to what the run recorded, so a private image elsewhere is never embedded."""
    import hashlib

    from conftest import RED, shape_png

    from vision_eval.report.thumbs import thumbnail

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "red.png").write_bytes(shape_png(RED, 2))
    rows = [{"id": "a", "output": "x", "expected_output": "x", "images": ["red.png"]}]
    (tmp_path / "data" / "rows.jsonl").write_text(json.dumps(rows[0]) + "\n")
    ve.evaluate(str(tmp_path / "data" / "rows.jsonl"), evaluators={"e": {"type": "exact_match"}},
                output_dir=tmp_path / "run")  # fmt: skip
    private = tmp_path / "private.png"
    private.write_bytes(shape_png((10, 200, 10), 5, size=(64, 64)))
    samples = pl.read_parquet(tmp_path / "run" / "samples.parquet")
    crafted = samples.with_columns(
        pl.col("images").list.eval(pl.element().struct.with_fields(pl.lit(str(private)).alias("path")))
    )
    crafted.write_parquet(tmp_path / "run" / "samples.parquet")
    proc = subprocess.run([sys.executable, "-m", "vision_eval.report.cli", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "run" / "report.html").read_text()
    assert "is not the image the run recorded" in html
    private_thumb = thumbnail(str(private))  # what embedding it would have put in the page
    assert private_thumb.uri is not None and private_thumb.uri not in html
    red = tmp_path / "data" / "red.png"
    assert thumbnail(str(red), sha256=hashlib.sha256(red.read_bytes()).hexdigest()).uri is not None
