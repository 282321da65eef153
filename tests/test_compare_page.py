"""comparison.html as a user reads it: the table's cells and row colours, the note on the statistics, the sentence
counting the flips, and one card per flipped sample (regressions first) with its changes, its images named relative
to the dataset root (or why one is missing), its texts escaped, and both responses."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import vision_eval as ve
from vision_eval.compare import Comparison, compare, judged, load_side
from vision_eval.compare.page import render

SCORE = {"type": "python", "function": "tests.fixtures.py_judges:score_from_output", "threshold": 0.5}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def css(self) -> str:
        return self.attrs.get("class", "")

    def all(self, tag: str) -> list[Element]:
        found = []
        for child in self.children:
            if isinstance(child, Element):
                found += [child] if child.tag == tag else []
                found += child.all(tag)
        return found

    def one(self, tag: str, css: str | None = None) -> Element:
        (found,) = [e for e in self.all(tag) if css is None or e.css == css]
        return found

    def loose_text(self) -> list[str]:
        """Text written directly in this element, between its children."""
        return [c for c in self.children if isinstance(c, str)]


class _Tree(HTMLParser):
    VOID = {"img", "meta", "br"}

    def __init__(self) -> None:
        super().__init__()
        self.root = Element("document", {})
        self.open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.open[-1].children.append(element)
        if tag not in self.VOID:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        assert self.open[-1].tag == tag, f"</{tag}> closes <{self.open[-1].tag}>"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


def parsed(page: str) -> Element:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert tree.open == [tree.root], "an element is left open"
    return tree.root.one("body")


def table_rows(body: Element) -> list[tuple[str, list[str]]]:
    return [(tr.css, [td.text for td in tr.all("td")]) for tr in body.one("table").one("tbody").all("tr")]


def flipped_sentence(body: Element) -> str:
    paragraphs = [c for c in body.children if isinstance(c, Element) and c.tag == "p"]
    return paragraphs[-1].text


def thumbnail_size(uri: str) -> tuple[int, int]:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).size


def two_runs(
    folder: Path,
    base: list[dict[str, Any]],
    cand: list[dict[str, Any]],
    cand_stack: dict[str, Any] | None = None,
    base_stack: dict[str, Any] | None = None,
) -> Comparison:
    """Runs of the rows ``base`` and ``cand`` (JSON Lines files in ``folder``, images relative to it), compared."""
    dirs = []
    folder.mkdir(parents=True, exist_ok=True)
    for label, rows in (("base", base), ("cand", cand)):
        path = folder / f"{label}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        stack = (cand_stack if label == "cand" else base_stack) or {"score": SCORE}
        ve.evaluate(path, evaluators=stack, output_dir=folder / label, run={"write_report": False, "progress": False})
        dirs.append(folder / label)
    return compare(load_side(dirs[0]), load_side(dirs[1]))


def scored(scores: list[float], images: list[list[str]] | None = None) -> list[dict[str, Any]]:
    """Rows whose output is their score (``nan``: an error), with a question that needs escaping."""
    rows = []
    for i, score in enumerate(scores):
        row = {"id": f"r{i}", "input": f"is {i} < {i + 1} & why?", "expected_output": f"yes ({i})",
               "output": str(score)}  # fmt: skip
        rows.append({**row, "images": images[i]} if images else row)
    return rows


@pytest.fixture(scope="module")
def four_flips(tmp_path_factory: pytest.TempPathFactory) -> tuple[Comparison, Path]:
    """Five samples: r0 passed -> failed (two images), r1 failed -> passed (its image since deleted), r2 passed ->
    error, r3 error -> passed, r4 passed on both sides."""
    from conftest import BLUE, RED, shape_png

    folder = tmp_path_factory.mktemp("four_flips")
    (folder / "imgs").mkdir()
    (folder / "imgs" / "red.png").write_bytes(shape_png(RED, 2, size=(600, 300)))
    (folder / "imgs" / "blue.png").write_bytes(shape_png(BLUE, 3))
    (folder / "imgs" / "gone.png").write_bytes(shape_png(BLUE, 1))
    images = [["imgs/red.png", "imgs/blue.png"], ["imgs/gone.png"], ["imgs/blue.png"], [], ["imgs/blue.png"]]
    nan = float("nan")
    comparison = two_runs(folder, scored([1.0, 0.0, 1.0, nan, 1.0], images), scored([0.0, 1.0, nan, 1.0, 1.0], images))
    (folder / "imgs" / "gone.png").unlink()
    return comparison, folder


def test_the_table_row_the_note_and_the_flip_count(four_flips: tuple[Comparison, Path]) -> None:
    comparison, _ = four_flips
    body = parsed(render(comparison, judged(comparison.table)))
    assert [th.text for th in body.one("thead").all("th")] == [
        "evaluator", "n paired", "baseline", "candidate", "\u0394 (95% CI)", "p", "test", "failed\u2192passed",
        "passed\u2192failed", "\u2192 error", "error \u2192", "verdict",
    ]  # fmt: skip
    # r0, r1 and r4 are scored on both sides: 2/3 either way; one flip each way: McNemar's p is 1
    assert table_rows(body) == [
        ("same", ["score", "3", "0.667", "0.667", "+0.000 (-1.000 to +1.000)", "1.0000", "mcnemar_exact", "1", "1",
                  "1", "1", "no significant difference"]),
    ]  # fmt: skip
    assert body.one("p", "pairing").text == "5 samples paired."
    assert body.one("p", "note").text == (
        "\u0394 = candidate \u2212 baseline mean score over the samples scored on both sides; 95% interval by paired "
        "bootstrap; p by the exact McNemar test (pass/fail scores) or the Wilcoxon signed-rank test (other scores)."
    )
    assert body.one("h2").text == "Flipped samples"
    assert flipped_sentence(body) == (
        "4 samples changed verdict (4 verdicts over the evaluators: 1 passed \u2192 failed, 1 \u2192 error, "
        "1 failed \u2192 passed, 1 error \u2192)."
    )
    assert [text.strip() for text in body.loose_text()] == [""] * len(body.loose_text())
    table = body.one("table")
    assert [text for part in (table, *table.all("thead"), *table.all("tbody"), *table.all("tr")) for text in
            part.loose_text()] == []  # fmt: skip


def test_a_card_per_flipped_sample_worst_first(four_flips: tuple[Comparison, Path]) -> None:
    comparison, _ = four_flips
    cards = parsed(render(comparison, judged(comparison.table))).all("article")
    assert [(card.css, card.attrs["data-sample-id"], card.one("h3").text) for card in cards] == [
        ("flip worse", "r0", "r0"), ("flip worse", "r2", "r2"), ("flip better", "r1", "r1"),
        ("flip better", "r3", "r3"),
    ]  # fmt: skip
    assert [[(li.css, li.text) for li in card.all("li")] for card in cards] == [
        [("worse", "score: passed \u2192 failed (1.00 \u2192 0.00)")],
        [("worse", "score: passed \u2192 error (1.00 \u2192 -)")],
        [("better", "score: failed \u2192 passed (0.00 \u2192 1.00)")],
        [("better", "score: error \u2192 passed (- \u2192 1.00)")],
    ]
    r0 = cards[0]
    assert [h4.text for h4 in r0.all("h4")] == ["input", "expected output", "baseline response", "candidate response"]
    assert [pre.text for pre in r0.all("pre")] == ["is 0 < 1 & why?", "yes (0)", "1.0", "0.0"]
    assert [pre.text for pre in cards[1].all("pre")] == ["is 2 < 3 & why?", "yes (2)", "1.0", "nan"]
    images = r0.one("div", "images")
    assert [(img.attrs["alt"], img.attrs["title"]) for img in images.all("img")] == [
        ("imgs/red.png", "imgs/red.png"), ("imgs/blue.png", "imgs/blue.png"),
    ]  # fmt: skip
    assert images.loose_text() == []
    assert thumbnail_size(images.all("img")[0].attrs["src"]) == (256, 128)  # 600 x 300, at most 256 a side
    (missing,) = cards[2].one("div", "images").children
    assert isinstance(missing, Element) and missing.css == "missing"
    assert missing.text == "imgs/gone.png: image file not found: imgs/gone.png"  # no local folder shown
    assert cards[3].one("div", "images").children == []
    assert [c for card in cards for c in card.loose_text()] == []


def test_the_flip_sentence_in_the_singular_and_when_cards_are_cut(tmp_path: Path) -> None:
    comparison = two_runs(tmp_path / "one", scored([1.0, 1.0]), scored([0.0, 1.0]))
    body = parsed(render(comparison, judged(comparison.table)))
    assert flipped_sentence(body) == "1 sample changed verdict (1 verdict over the evaluators: 1 passed \u2192 failed)."
    assert len(body.all("article")) == 1
    comparison = two_runs(tmp_path / "three", scored([1.0, 1.0, 1.0]), scored([0.0, 0.0, 0.0]))
    body = parsed(render(comparison, judged(comparison.table), max_flipped=2))
    assert flipped_sentence(body) == (
        "3 samples changed verdict (3 verdicts over the evaluators: 3 passed \u2192 failed). "
        "Showing the first 2; every flip is in comparison_flips.parquet."
    )
    assert [card.attrs["data-sample-id"] for card in body.all("article")] == ["r0", "r1"]


def test_no_flip_an_unpaired_evaluator_and_a_worse_one(tmp_path: Path) -> None:
    """Nothing flipped on paired samples; an evaluator of the candidate only is not compared (dashes); a change of
    thresholds is noted beside the verdict; a significant drop is a red row with a small p written as a bound."""
    same = scored([1.0] * 30)
    stricter = {"score": {**SCORE, "threshold": 0.9}, "extra": SCORE}
    comparison = two_runs(tmp_path, same, same, stricter)
    body = parsed(render(comparison, judged(comparison.table)))
    assert table_rows(body) == [
        ("same", ["score", "30", "1.000", "1.000", "+0.000 (+0.000 to +0.000)", "1.0000", "mcnemar_exact", "0", "0",
                  "0", "0", "no significant difference (thresholds differ (0.5 vs 0.9): pass/fail flips follow them "
                  "too)"]),
        ("not-compared", ["extra", "0", "-", "-", "-", "-", "-", "0", "0", "0", "0",
                          "not compared (in the candidate only)"]),
    ]  # fmt: skip
    assert flipped_sentence(body) == "No paired sample changed verdict."
    assert body.all("article") == []
    worse = two_runs(tmp_path / "worse", same, scored([0.0] * 30))
    rows = table_rows(parsed(render(worse, judged(worse.table))))
    assert rows == [
        ("worse", ["score", "30", "1.000", "0.000", "-1.000 (-1.000 to -1.000)", "< 0.0001", "mcnemar_exact", "0",
                   "30", "0", "0", "worse"]),
    ]  # fmt: skip


def test_a_sample_skipped_on_one_side_flips_and_one_skipped_on_both_is_not_compared(tmp_path: Path) -> None:
    """A `where` filter skips rows: scored -> skipped is a regression (`to_skip`), skipped -> scored is not
    (`from_skip`); an evaluator both sides skip everywhere is not compared, and says why."""
    rows = [{**row, "task": task} for row, task in zip(scored([1.0, 1.0, 1.0, 0.0]), "abcd", strict=True)]
    base = {"score": {**SCORE, "where": "task != 'b' AND task != 'd'"}, "none": {**SCORE, "where": "task = 'z'"}}
    cand = {"score": {**SCORE, "where": "task != 'c' AND task != 'd'"}, "none": {**SCORE, "where": "task = 'z'"}}
    comparison = two_runs(tmp_path, rows, rows, cand, base)
    flips = comparison.flips.select("sample_id", "change", "baseline_verdict", "candidate_verdict")
    assert flips.rows() == [("r1", "from_skip", "skipped", "passed"), ("r2", "to_skip", "passed", "skipped")]
    table = judged(comparison.table)
    counts = table.select("evaluator", "n_samples", "n_paired", "to_skip", "from_skip", "note", "verdict").rows()
    assert counts == [
        ("score", 4, 1, 1, 1, None, "no significant difference"),
        ("none", 4, 0, 0, 0, "skipped on both sides", "not compared"),
    ]
    body = parsed(render(comparison, table))
    assert flipped_sentence(body) == (
        "2 samples changed verdict (2 verdicts over the evaluators: 1 \u2192 skipped, 1 skipped \u2192)."
    )
    cards = body.all("article")
    assert [(card.css, card.attrs["data-sample-id"]) for card in cards] == [("flip worse", "r2"), ("flip better", "r1")]
    assert [(li.css, li.text) for card in cards for li in card.all("li")] == [
        ("worse", "score: passed \u2192 skipped (1.00 \u2192 -)"),
        ("better", "score: skipped \u2192 passed (- \u2192 1.00)"),
    ]


def test_quotes_in_a_sample_id_stay_in_its_attribute_and_a_missing_text_says_none(tmp_path: Path) -> None:
    sample = "say \"hi\" & 'bye'"
    rows = [{"id": sample, "input": "q", "output": "1.0"}]
    comparison = two_runs(tmp_path, rows, [{**rows[0], "output": "0.0"}])
    (card,) = parsed(render(comparison, judged(comparison.table))).all("article")
    assert (card.attrs["data-sample-id"], card.one("h3").text) == (sample, sample)
    assert [pre.text for pre in card.all("pre")] == ["q", "(none)", "1.0", "0.0"]  # no expected output


def test_long_texts_are_cut_at_4000_characters_and_small_p_values_are_a_bound(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "a" * 4000, "output": "1.0"}, {"id": "b", "input": "b" * 4001, "output": "1.0"}]
    comparison = two_runs(tmp_path, rows, [{**row, "output": "0.0"} for row in rows])
    table = judged(comparison.table)
    cards = parsed(render(comparison, table)).all("article")
    assert [card.all("pre")[0].text for card in cards] == ["a" * 4000, "b" * 4000 + "\u2026 (4,001 characters)"]
    cells = []
    for p_value in (0.00009999, 0.0001, 0.00015, 0.99996):
        body = parsed(render(comparison, table.with_columns(p_value=pl.lit(p_value))))
        cells.append(table_rows(body)[0][1][5])
    assert cells == ["< 0.0001", "0.0001", "0.0001", "1.0000"]
