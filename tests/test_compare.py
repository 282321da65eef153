"""``vision-eval compare``: two runs paired sample by sample on id and content (whatever files they came from), per
evaluator both means, the difference with a paired bootstrap interval, a p-value checked against scipy, the flips,
the files it writes, and its exit codes as a CI gate."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

import vision_eval as ve
from vision_eval.commands.compare import main
from vision_eval.compare import NotARun, compare, judged, load_side
from vision_eval.stats import bootstrap_interval, mcnemar_exact, paired_test, wilcoxon_signed_rank


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def newcomer_files(folder: Path) -> tuple[Path, Path]:
    """The issue's newcomer: 30 counting questions about two images, two prediction files with 5 answers changed
    (4 wrong answers fixed, 1 wrong answer changed to another wrong one)."""
    from conftest import BLUE, RED, shape_png

    (folder / "red.png").write_bytes(shape_png(RED, 2))
    (folder / "blue.png").write_bytes(shape_png(BLUE, 3))
    v1, v2 = [], []
    for i in range(30):
        expected = str(i % 7)
        before = str(i % 7 + 1) if i < 5 else expected
        after = expected if i < 4 else ("99" if i == 4 else before)
        common = {"id": f"s{i}", "question": f"How many shapes? ({i})", "answer": expected,
                  "image": "red.png" if i % 2 else "blue.png"}  # fmt: skip
        v1.append({**common, "prediction": before})
        v2.append({**common, "prediction": after})
    return _write_jsonl(folder / "preds_v1.jsonl", v1), _write_jsonl(folder / "preds_v2.jsonl", v2)


COLUMNS = {"question": "input", "answer": "expected_output", "prediction": "output", "image": "images"}
STACK = {"count": {"type": "exact_count"}, "exact": {"type": "exact_match"}}


def run_file(path: Path, out: Path, stack: dict[str, Any] | None = None) -> Path:
    ve.evaluate(path, evaluators=stack or STACK, dataset={"columns": COLUMNS}, output_dir=out,
                run={"write_report": False, "progress": False})  # fmt: skip
    return out


@pytest.fixture
def newcomer(tmp_path: Path) -> tuple[Path, Path]:
    v1, v2 = newcomer_files(tmp_path)
    return run_file(v1, tmp_path / "run1"), run_file(v2, tmp_path / "run2")


def test_two_prediction_files_pair_and_give_the_right_flips(newcomer: tuple[Path, Path]) -> None:
    run1, run2 = newcomer
    result = compare(load_side(run1), load_side(run2))
    assert (result.pairing.paired, result.pairing.differ) == (30, 0)
    assert (result.pairing.only_baseline, result.pairing.only_candidate) == (0, 0)
    table = {row["evaluator"]: row for row in judged(result.table).iter_rows(named=True)}
    for name in ("count", "exact"):
        row = table[name]
        assert (row["n_paired"], row["to_pass"], row["to_fail"], row["to_error"]) == (30, 4, 0, 0)
        assert row["baseline_mean"] == pytest.approx(25 / 30) and row["candidate_mean"] == pytest.approx(29 / 30)
        assert row["delta"] == pytest.approx(4 / 30) and row["test"] == "mcnemar_exact"
        assert row["p_value"] == pytest.approx(stats.binomtest(4, 4, 0.5).pvalue)  # 0.125: not significant
        assert row["verdict"] == "no significant difference"
    flips = result.flips.filter(pl.col("evaluator") == "count").sort("sample_id")
    assert flips["sample_id"].to_list() == ["s0", "s1", "s2", "s3"]
    assert set(flips["change"]) == {"to_pass"} and set(flips["baseline_verdict"]) == {"failed"}


def test_the_report_of_the_two_runs_shows_the_flips(newcomer: tuple[Path, Path]) -> None:
    """`vision-eval-report run1 run2` on the newcomer's runs: the samples pair, and the page names the 4 flips
    (it used to say "no sample changed" under every evaluator)."""
    from test_report import payload_of

    from vision_eval.report import build_html, load_runs

    payload = payload_of(build_html(load_runs(list(newcomer))))
    assert payload["pivot"]["changed"] == {"count": 4, "exact": 4}
    assert payload["pivot"]["compared"] == {"count": 30, "exact": 30}
    changed = sorted(s["id"] for s in payload["samples"] if s.get("changed"))
    assert changed == ["s0", "s1", "s2", "s3"] and len(payload["samples"]) == 30


def test_the_cli_prints_writes_and_shows_the_flipped_samples(newcomer: tuple[Path, Path], capsys: Any) -> None:
    run1, run2 = newcomer
    assert main([str(run1), str(run2)]) == 0
    out = capsys.readouterr().out
    assert "pairing: 30 samples paired" in out
    assert "| count | 30 | 0.833 | 0.967 | +0.133" in out and "| mcnemar_exact | 4 | 0 | 0 | 0 |" in out
    table = pl.read_parquet(run2 / "comparison.parquet")
    wanted = ["evaluator", "n_paired", "baseline_mean", "candidate_mean", "delta", "ci_low", "ci_high", "p_value",
              "test", "to_pass", "to_fail", "to_error"]  # fmt: skip
    assert set(wanted) <= set(table.columns) and table["evaluator"].to_list() == ["count", "exact"]
    assert pl.read_parquet(run2 / "comparison_flips.parquet").height == 8
    page = (run2 / "comparison.html").read_text()
    assert page.count('<article class="flip') == 4  # one card per flipped sample, both evaluators in it
    card = page[page.index('data-sample-id="s1"') :].split("</article>")[0]
    assert "count: failed \u2192 passed (0.00 \u2192 1.00)" in card
    assert "<h4>baseline response</h4><pre>2</pre>" in card and "<h4>candidate response</h4><pre>1</pre>" in card
    assert card.count('<img src="data:image/') == 1  # its image, embedded
    assert 'data-sample-id="s4"' not in page  # a changed answer that stayed wrong is no flip
    # -o: another folder
    assert main([str(run1), str(run2), "-o", str(run1.parent / "cmp"), "--no-html"]) == 0
    assert (run1.parent / "cmp" / "comparison.parquet").is_file() and not (
        run1.parent / "cmp" / "comparison.html"
    ).exists()


def test_a_content_mismatch_is_reported_and_not_compared(tmp_path: Path) -> None:
    v1, v2 = newcomer_files(tmp_path)
    rows = [json.loads(line) for line in v2.read_text().splitlines()]
    rows[1]["answer"] = "5"  # s1's expected output differs: another question under the same id
    rows[2]["image"] = "red.png"  # s2's image differs (blue in the baseline)
    rows = [*rows[:-1], {**rows[-1], "id": "extra"}]  # s29 in the baseline only, "extra" in the candidate only
    _write_jsonl(v2, rows)
    run1, run2 = run_file(v1, tmp_path / "run1"), run_file(v2, tmp_path / "run2")
    result = compare(load_side(run1), load_side(run2))
    pairing = result.pairing
    assert (pairing.paired, pairing.differ, pairing.only_baseline, pairing.only_candidate) == (27, 2, 1, 1)
    assert pairing.differing_ids == ["s1", "s2"]
    assert "2 share their ids but differ in content (s1, s2): not compared" in pairing.sentence()
    table = {row["evaluator"]: row for row in result.table.iter_rows(named=True)}
    assert table["count"]["n_paired"] == 27 and table["count"]["to_pass"] == 2  # s0 and s3; s1, s2 not compared
    assert set(result.flips["sample_id"]) == {"s0", "s3"}


def test_results_in_any_order_and_shards_give_the_same_comparison(newcomer: tuple[Path, Path], tmp_path: Path) -> None:
    """Rows are found by position when the results are laid out as runs write them, else joined on (id,
    evaluator): the same table either way; a folder holding a run's shards is one side."""
    run1, run2 = newcomer
    expected = compare(load_side(run1), load_side(run2))
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    for name in ("run.json", "samples.parquet"):
        (shuffled / name).write_bytes((run2 / name).read_bytes())
    pl.read_parquet(run2 / "results.parquet").sample(fraction=1.0, shuffle=True, seed=1).write_parquet(
        shuffled / "results.parquet"
    )
    v2 = run2.parent / "preds_v2.jsonl"
    for index in range(2):
        ve.evaluate(v2, evaluators=STACK, dataset={"columns": COLUMNS}, output_dir=tmp_path / "shards" / f"s{index}",
                    run={"shard": f"{index}/2", "write_report": False, "progress": False})  # fmt: skip
    for candidate in (shuffled, tmp_path / "shards"):
        result = compare(load_side(run1), load_side(candidate))
        assert result.pairing == expected.pairing
        assert result.table.equals(expected.table), candidate
        assert result.flips.sort("evaluator", "sample_id").equals(expected.flips.sort("evaluator", "sample_id"))


def test_a_side_holding_two_runs_of_the_same_samples_is_refused(newcomer: tuple[Path, Path], tmp_path: Path) -> None:
    run1, run2 = newcomer
    v1 = run1.parent / "preds_v1.jsonl"
    for index in range(2):  # the same run twice in one folder: not shards, one sample would count twice
        run_file(v1, tmp_path / "twice" / f"r{index}")
    assert main([str(run2), str(tmp_path / "twice")]) == 2


def test_columns_an_evaluator_reads_are_content_and_mismatched_evaluators_are_not_compared(tmp_path: Path) -> None:
    """A column read as the expected output through `columns:` is part of a sample's content; an evaluator scored
    under another protocol, or in one run only, is listed and not compared."""
    rows = [{"id": f"r{i}", "input": "How many?", "output": str(i % 3), "answer": str(i % 3)} for i in range(12)]
    other = [{**row, "answer": "9"} if row["id"] == "r5" else row for row in rows]
    base_stack = {"count": {"type": "exact_count", "columns": {"expected_output": "answer"}},
                  "lenient": {"type": "exact_count", "columns": {"expected_output": "answer"}}}  # fmt: skip
    cand_stack = {**base_stack, "lenient": {**base_stack["lenient"], "protocol": "lenient"},
                  "extra": {"type": "exact_match", "columns": {"expected_output": "answer"}}}  # fmt: skip
    for name, data, stack in (("base", rows, base_stack), ("cand", other, cand_stack)):
        ve.evaluate(data, evaluators=stack, output_dir=tmp_path / name, run={"write_report": False, "progress": False})
    result = compare(load_side(tmp_path / "base"), load_side(tmp_path / "cand"))
    assert (result.pairing.paired, result.pairing.differing_ids) == (11, ["r5"])
    notes = {row["evaluator"]: (row["n_paired"], row["note"]) for row in judged(result.table).iter_rows(named=True)}
    assert notes == {
        "count": (11, None),
        "lenient": (0, "scored under different protocols (lmms_eval vs lenient)"),
        "extra": (0, "in the candidate only"),
    }


def runs_of_scores(folder: Path, base: list[float], cand: list[float], name: str = "score") -> tuple[Path, Path]:
    """Two runs whose `name` evaluator scores sample i as base[i] and cand[i] (a python row function reading the
    score from the output), with the same inputs."""
    dirs = []
    for label, scores in (("base", base), ("cand", cand)):
        rows = [{"id": f"r{i:03d}", "input": f"q{i}", "output": str(float(s)), "expected_output": "x"}
                for i, s in enumerate(scores)]  # fmt: skip
        stack = {name: {"type": "python", "function": "tests.fixtures.py_judges:score_from_output", "threshold": 0.5}}
        ve.evaluate(rows, evaluators=stack, output_dir=folder / label, run={"write_report": False, "progress": False})
        dirs.append(folder / label)
    return dirs[0], dirs[1]


def test_a_seeded_regression_of_10_in_100_fails_the_gate_and_identical_runs_pass(tmp_path: Path) -> None:
    rng = np.random.default_rng(29)
    base = (rng.random(100) < 0.8).astype(float)
    cand = base.copy()
    worse = rng.choice(np.flatnonzero(base == 1), size=10, replace=False)
    cand[worse] = 0.0  # 10 samples that passed now fail
    run_base, run_cand = runs_of_scores(tmp_path, list(base), list(cand))
    gate = [str(run_base), str(run_cand), "--fail-on-regression", "--no-html"]
    assert main(gate) == 1
    row = pl.read_parquet(run_cand / "comparison.parquet").row(0, named=True)
    assert (row["to_fail"], row["to_pass"], row["test"], row["verdict"]) == (10, 0, "mcnemar_exact", "worse")
    assert row["p_value"] == pytest.approx(stats.binomtest(0, 10, 0.5).pvalue)  # 0.002
    assert row["ci_high"] < 0 < row["ci_low"] + 0.2
    assert main([*gate, "--min-delta", "0.2"]) == 0  # a drop of 0.1 is under the minimum that counts
    assert main([str(run_base), str(run_cand), "--no-html"]) == 0  # not a gate: reported, exit 0
    assert main([str(run_base), str(run_base), "--fail-on-regression", "--no-html"]) == 0  # identical runs
    same = pl.read_parquet(run_base / "comparison.parquet").row(0, named=True)
    assert (same["delta"], same["p_value"], same["ci_low"], same["ci_high"]) == (0.0, 1.0, 0.0, 0.0)


def test_errors_that_appear_in_the_candidate_are_a_regression(tmp_path: Path) -> None:
    base = [1.0] * 60
    cand = [1.0] * 48 + [float("nan")] * 12  # 12 rows that now fail to score: errors, not scores
    run_base, run_cand = runs_of_scores(tmp_path, base, cand)
    assert main([str(run_base), str(run_cand), "--fail-on-regression", "--no-html"]) == 1
    row = pl.read_parquet(run_cand / "comparison.parquet").row(0, named=True)
    assert (row["n_paired"], row["to_error"], row["delta"]) == (48, 12, 0.0)  # the scored pairs did not change
    assert row["error_p_value"] == pytest.approx(stats.binomtest(0, 12, 0.5).pvalue) and row["verdict"] == "worse"


def test_scores_are_compared_by_wilcoxon_and_a_paired_bootstrap(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.9, 40).round(3)
    cand = np.clip(base + rng.normal(0.05, 0.08, 40), 0, 1).round(3)
    run_base, run_cand = runs_of_scores(tmp_path, list(base), list(cand))
    result = compare(load_side(run_base), load_side(run_cand), seed=7, resamples=2000)
    row = result.table.row(0, named=True)
    assert row["test"] == "wilcoxon"
    assert row["p_value"] == pytest.approx(stats.wilcoxon(cand - base).pvalue)
    assert row["delta"] == pytest.approx(float((cand - base).mean()))
    order = np.argsort(cand - base, kind="stable")  # pairs are resampled in the order of their differences
    base, cand = base[order], cand[order]
    rng7 = np.random.default_rng(7)
    kw = {"rng": rng7} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng7}
    wanted = stats.bootstrap((base, cand), lambda b, c, axis=-1: (c - b).mean(axis=axis), paired=True,
                             n_resamples=2000, method="percentile", vectorized=True, **kw)  # fmt: skip
    interval = wanted.confidence_interval
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((interval.low, interval.high), abs=1e-9)


def test_mcnemar_is_scipys_exact_binomial_test_on_the_discordant_pairs() -> None:
    for to_pass, to_fail in ((0, 10), (4, 0), (7, 3), (12, 30), (250, 300)):
        assert mcnemar_exact(to_pass, to_fail) == pytest.approx(stats.binomtest(to_pass, to_pass + to_fail).pvalue)
    assert mcnemar_exact(0, 0) == 1.0
    base = np.array([1, 1, 0, 0, 1, 0, 1, 1, 0, 1] * 5, dtype=float)
    cand = np.array([1, 0, 1, 1, 1, 0, 0, 1, 1, 1] * 5, dtype=float)
    test = paired_test(base, cand)
    assert test.test == "mcnemar_exact" and test.p_value == pytest.approx(stats.binomtest(15, 25).pvalue)
    assert wilcoxon_signed_rank(np.zeros(5)) == 1.0


def test_many_rows_of_many_distinct_differences_get_the_bootstrap_interval() -> None:
    """Past rows x resamples of 50M, resamples are drawn by bins of the sorted values: the interval agrees with
    the one drawn row by row (scipy's percentile bootstrap), to a small part of its width."""
    values = np.random.default_rng(5).beta(2, 5, size=60_000) - 0.25
    low, high = bootstrap_interval(values, seed=1, resamples=2000)
    rng = np.random.default_rng(1)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap((values,), np.mean, n_resamples=2000, method="percentile", vectorized=True, batch=200, **kw)
    width = res.confidence_interval.high - res.confidence_interval.low
    assert low == pytest.approx(res.confidence_interval.low, abs=0.05 * width)
    assert high == pytest.approx(res.confidence_interval.high, abs=0.05 * width)


def test_exit_2_when_a_side_is_not_a_run_or_nothing_pairs(tmp_path: Path, capsys: Any) -> None:
    v1, v2 = newcomer_files(tmp_path)
    run1 = run_file(v1, tmp_path / "run1")
    (tmp_path / "empty").mkdir()
    assert main([str(run1), str(tmp_path / "empty")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    other = [{**json.loads(line), "question": "another question"} for line in v2.read_text().splitlines()]
    run2 = run_file(_write_jsonl(tmp_path / "other.jsonl", other), tmp_path / "run2")
    assert main([str(run1), str(run2), "--fail-on-regression"]) == 2
    err = capsys.readouterr().err
    assert "nothing could be paired" in err


def test_the_subcommand_runs_from_the_console(newcomer: tuple[Path, Path], subprocess_env: dict[str, str]) -> None:
    """`vision-eval compare` as a user types it; it imports no model-calling library (litellm) on the way."""
    run1, run2 = newcomer
    code = (
        "import sys; from vision_eval.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n"
        "    print('litellm' in sys.modules, file=sys.stderr); raise"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "compare", str(run1), str(run2), "--fail-on-regression"],
        capture_output=True, text=True, timeout=120, env=subprocess_env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pairing: 30 samples paired" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "False"


def test_a_side_holding_several_variants_is_refused(tmp_path: Path, capsys: Any) -> None:
    """A sweep folder of two configs is two runs, not one side: name one of them."""
    run_base, _ = runs_of_scores(tmp_path / "sweep", [1.0, 0.0], [1.0, 1.0])
    info = json.loads((tmp_path / "sweep" / "cand" / "run.json").read_text())
    info["config"]["evaluators"]["score"]["threshold"] = 0.9
    (tmp_path / "sweep" / "cand" / "run.json").write_text(json.dumps(info))
    assert main([str(run_base), str(tmp_path / "sweep")]) == 2
    assert "holds 2 different runs" in capsys.readouterr().err


@pytest.mark.parametrize("variants", [5, 6])
def test_a_refused_side_names_at_most_five_of_its_runs(tmp_path: Path, variants: int) -> None:
    """The refusal lists the runs it found by folder, the first five, and says when there are more."""
    run, _ = runs_of_scores(tmp_path / "one", [1.0], [1.0])
    sweep = tmp_path / "sweep"
    for i in range(variants):
        shutil.copytree(run, sweep / f"t{i}")
        info = json.loads((sweep / f"t{i}" / "run.json").read_text())
        info["config"]["evaluators"]["score"]["threshold"] = i / 10
        (sweep / f"t{i}" / "run.json").write_text(json.dumps(info))
    with pytest.raises(NotARun) as refused:
        load_side(sweep)
    shown = {5: "t0; t1; t2; t3; t4", 6: "t0; t1; t2; t3; t4; ..."}[variants]
    assert str(refused.value) == (
        f"{sweep} holds {variants} different runs ({shown}): a side is one run, or the shards of one run; "
        "name one run's folder"
    )


def test_content_is_the_values_not_how_a_file_stored_them() -> None:
    """No value is one value (a null, an empty image list, a column the file lacks); text read as categories is
    text; another image hash, another input or an expected output moved into the input is another sample."""
    from vision_eval.pairing import content_hashes

    ref = pl.Struct({"path": pl.Utf8, "sha256": pl.Utf8, "source": pl.Utf8, "error": pl.Utf8})
    image = [{"path": "/a/x.png", "sha256": "h1", "source": "path", "error": None}]

    def hashed(**columns: Any) -> list[int]:
        frame = pl.LazyFrame({"id": ["x", "y"], **columns})
        return content_hashes(frame).collect()["_content"].to_list()

    plain = hashed(input=["q", None], expected_output=["7", "8"])
    assert (
        hashed(input=["q", None], expected_output=["7", "8"], images=pl.Series([[], []], dtype=pl.List(ref))) == plain
    )
    assert hashed(input=pl.Series(["q", None], dtype=pl.Categorical), expected_output=["7", "8"]) == plain
    assert hashed(input=["q", None], expected_output=[7, 8]) == plain  # a number column read from CSV
    moved = hashed(input=["7", None], expected_output=["q", "8"])
    assert moved[0] != plain[0] and moved[1] == plain[1]
    other = hashed(input=["q", None], expected_output=["7", "8"], images=pl.Series([image, []], dtype=pl.List(ref)))
    assert other[0] != plain[0] and other[1] == plain[1]
    renamed = [{**image[0], "path": "/b/elsewhere.png"}]  # the same file's bytes elsewhere: the same image
    elsewhere = hashed(
        input=["q", None], expected_output=["7", "8"], images=pl.Series([renamed, []], dtype=pl.List(ref))
    )
    assert elsewhere == other


def test_the_pairing_sentence_counts_in_words_singular_and_plural() -> None:
    from vision_eval.pairing import Pairing

    assert Pairing(paired=1).sentence() == "1 sample paired"
    assert Pairing(paired=0).sentence() == "0 samples paired"
    assert Pairing(paired=30, differ=1, only_baseline=2, differing_ids=["s3"]).sentence() == (
        "30 samples paired; 1 shares its id but differs in content (s3): not compared; 2 in the baseline only"
    )
    assert Pairing(paired=2, differ=3, only_candidate=1, differing_ids=["a", "b"]).sentence() == (
        "2 samples paired; 3 share their ids but differ in content (a, b, ...): not compared; 1 in the candidate only"
    )


def test_the_files_go_where_output_says(tmp_path: Path) -> None:
    """`-o` naming a .parquet file puts the flips and the page beside it under its name (in folders made for it);
    `-o` naming a folder, or none, writes the three standard names; each table row names both sides."""
    from vision_eval.compare import write_comparison

    run_base, run_cand = runs_of_scores(tmp_path, [1.0, 0.0, 1.0], [0.0, 0.0, 0.0])
    result = compare(load_side(run_base), load_side(run_cand))
    table = judged(result.table)
    named = tmp_path / "new" / "deeper" / "gate.parquet"
    assert write_comparison(result, table, named, max_flipped=1) == [named, named.with_name("gate_flips.parquet"),
                                                      named.with_name("gate.html")]  # fmt: skip
    assert write_comparison(result, table, tmp_path / "out", html=False) == [
        tmp_path / "out" / "comparison.parquet",
        tmp_path / "out" / "comparison_flips.parquet",
    ]
    standard = ["comparison.parquet", "comparison_flips.parquet", "comparison.html"]
    assert write_comparison(result, table) == [run_cand / name for name in standard]
    for path in (named, run_cand / "comparison.parquet"):
        row = pl.read_parquet(path).row(0, named=True)
        assert (row["evaluator"], row["to_fail"], row["baseline"], row["candidate"]) == (
            "score",
            2,
            str(run_base),
            str(run_cand),
        )
    flips = pl.read_parquet(named.with_name("gate_flips.parquet"))
    assert flips.select("sample_id", "change").rows() == [("r000", "to_fail"), ("r002", "to_fail")]
    assert named.with_name("gate.html").read_text().count("<article") == 1  # max_flipped=1
    assert (run_cand / "comparison.html").read_text().count("<article") == 2


def test_the_verdict_at_its_bounds() -> None:
    """worse: p < alpha and a drop of at least min_delta, or an error rate up by at least min_delta with the
    error flips' p < alpha (before anything else); not compared: nothing scored on both sides; better: p < alpha
    and a rise of at least min_delta; else no significant difference. The bounds are exact."""
    cases = [  # n_paired, delta, p_value, baseline_error_rate, candidate_error_rate, error_p_value, verdict
        (10, -0.125, 0.0499, 0.0, 0.0, 1.0, "worse"),
        (10, -0.0625, 0.001, 0.0, 0.0, 1.0, "no significant difference"),  # dropped by less than min_delta
        (10, -0.5, 0.05, 0.0, 0.0, 1.0, "no significant difference"),  # p not under alpha
        (10, 0.125, 0.0499, 0.0, 0.0, 1.0, "better"),
        (10, 0.0625, 0.001, 0.0, 0.0, 1.0, "no significant difference"),
        (10, 0.5, 0.05, 0.0, 0.0, 1.0, "no significant difference"),
        (10, 0.0, 1.0, 0.125, 0.25, 0.0499, "worse"),  # errors up by min_delta
        (10, 0.5, 0.001, 0.125, 0.25, 0.0499, "worse"),  # a better score does not excuse more errors
        (10, 0.0, 1.0, 0.125, 0.1875, 0.001, "no significant difference"),  # errors up by less
        (10, 0.0, 1.0, 0.125, 0.25, 0.05, "no significant difference"),
        (10, 0.0, 1.0, 0.25, 0.0, 0.001, "no significant difference"),  # errors down
        (0, None, None, 0.0, 0.5, 0.001, "worse"),  # nothing scored on both sides, but the candidate errs
        (0, None, None, 0.0, 0.0, 1.0, "not compared"),
        (None, None, None, None, None, None, "not compared"),
    ]
    names = ["n_paired", "delta", "p_value", "baseline_error_rate", "candidate_error_rate", "error_p_value"]
    table = pl.DataFrame([case[:-1] for case in cases], schema=names, orient="row")
    judged_table = judged(table, alpha=0.05, min_delta=0.125)
    assert judged_table["verdict"].to_list() == [case[-1] for case in cases]
    assert set(judged_table["alpha"]) == {0.05} and set(judged_table["min_delta"]) == {0.125}
    by_default = judged(table.head(1).with_columns(delta=pl.lit(-0.001)))  # alpha 0.05, any drop counts
    assert by_default.select("verdict", "alpha", "min_delta").row(0) == ("worse", 0.05, 0.0)


def test_resamples_drawn_in_chunks_are_the_resamples_asked_for() -> None:
    """Resamples are drawn a chunk at a time (memory), and the chunks add up to the count asked for: a bootstrap
    of 1,000 distinct values drawn as counts in two chunks (5,000 and 1,000) is the one drawn at once."""
    from vision_eval.stats import chunk_sizes, counted_interval

    assert [chunk_sizes(10, 4), chunk_sizes(8, 4), chunk_sizes(5, 9), chunk_sizes(3, 1), chunk_sizes(3, 0)] == [
        [4, 4, 2], [4, 4], [5], [1, 1, 1], [1, 1, 1],
    ]  # fmt: skip
    distinct = np.linspace(-1.0, 1.0, 1000)
    counts = np.random.default_rng(2).integers(1, 20, size=1000)
    n = int(counts.sum())
    means = np.random.default_rng(4).multinomial(n, counts / n, size=6000) @ distinct / n
    wanted = np.percentile(means, [2.5, 97.5])
    assert counted_interval(distinct, counts, seed=4, resamples=6000) == pytest.approx(tuple(wanted), abs=1e-12)


def test_many_rows_drawn_by_bins_give_the_bootstrap_interval_of_the_mean() -> None:
    """60,000 distinct values x 10,000 resamples are drawn by bins; the bootstrap distribution of the mean of n
    draws has the values' standard deviation over sqrt(n) and, at this n, is normal: the 2.5% and 97.5% points
    are the mean -/+ 1.96 of those, to well under 2% of the interval's width (the Monte Carlo error is ~0.7%)."""
    values = np.random.default_rng(5).beta(2, 5, size=60_000) - 0.25
    low, high = bootstrap_interval(values, seed=1, resamples=10_000)
    half = stats.norm.ppf(0.975) * values.std() / np.sqrt(values.size)
    width = 2 * half
    assert low == pytest.approx(values.mean() - half, abs=0.02 * width)
    assert high == pytest.approx(values.mean() + half, abs=0.02 * width)


def test_content_columns_are_the_mapped_inputs_of_every_run() -> None:
    """Beside input, expected output and images, a column an evaluator reads in their place is content (a column
    name or a list of them, and an answers column), the output is not; a malformed entry is passed over."""
    from vision_eval.pairing import content_columns

    infos = [
        {"config": {"evaluators": {
            "a": {"columns": {"input": "question", "output": "prediction", "images": ["img1", "img2"]}},
            "b": {"answers_column": "choices", "columns": ["not", "a", "mapping"]},
            "c": "not a mapping",
        }}},
        {"config": {"evaluators": {"a": {"columns": {"expected_output": "question"}}}}},
        {"config": {"evaluators": ["not", "a", "mapping"]}},
        {},
    ]  # fmt: skip
    assert content_columns(infos) == ["input", "expected_output", "images", "question", "img1", "img2", "choices"]


def test_the_comparison_table_has_its_columns_and_types_whatever_was_compared(tmp_path: Path) -> None:
    """comparison.parquet's columns in order, with their types even when no evaluator could be compared; the
    evaluators' types are read from the results when run.json does not describe them."""
    run_base, run_cand = runs_of_scores(tmp_path, [1.0, 0.0], [1.0, 1.0])
    for run in (run_base, run_cand):
        info = json.loads((run / "run.json").read_text())
        info.pop("evaluators", None)
        (run / "run.json").write_text(json.dumps(info))
    compared = compare(load_side(run_base), load_side(run_cand)).table
    assert compared.select("evaluator", "type", "n_paired", "to_pass").row(0) == ("score", "python", 2, 1)
    other = tmp_path / "other"
    ve.evaluate([{"id": "x", "input": "q", "output": "1.0", "expected_output": "x"}], evaluators={"em": {
        "type": "exact_match"}}, output_dir=other, run={"write_report": False, "progress": False})  # fmt: skip
    nothing = compare(load_side(run_base), load_side(other)).table
    assert nothing.select("evaluator", "n_paired", "note").rows() == [
        ("score", 0, "in the baseline only"), ("em", 0, "in the candidate only"),
    ]  # fmt: skip
    floats, ints = pl.Float64, pl.Int64
    wanted = {
        "evaluator": pl.Utf8, "type": pl.Utf8, "n_paired": ints, "baseline_mean": floats, "candidate_mean": floats,
        "delta": floats, "ci_low": floats, "ci_high": floats, "p_value": floats, "test": pl.Utf8, "to_pass": ints,
        "to_fail": ints, "to_error": ints, "from_error": ints, "to_skip": ints, "from_skip": ints, "n_samples": ints,
        "baseline_pass_rate": floats, "candidate_pass_rate": floats, "baseline_error_rate": floats,
        "candidate_error_rate": floats, "error_p_value": floats, "note": pl.Utf8,
    }  # fmt: skip
    assert list(compared.schema.items()) == list(wanted.items())
    assert list(nothing.schema.items()) == list(wanted.items())


def test_an_unreadable_image_is_its_path() -> None:
    """An image whose bytes could not be read (no hash) is known by its path: the same path on both sides is the
    same image, another path another one; references that record no path are all alike."""
    from vision_eval.pairing import content_hashes

    def hashed(images: list[list[dict[str, Any]]], fields: dict[str, Any]) -> list[int]:
        column = pl.Series(images, dtype=pl.List(pl.Struct(fields)))
        frame = pl.LazyFrame({"id": [str(i) for i in range(len(images))], "input": "q", "images": column})
        return content_hashes(frame).collect()["_content"].to_list()

    ref = {"path": pl.Utf8, "sha256": pl.Utf8}
    a, b = {"path": "/d/a.png", "sha256": None}, {"path": "/d/b.png", "sha256": None}
    read = {"path": "/d/a.png", "sha256": "h1"}
    first, second, same_a, hashed_a = hashed([[a], [b], [a], [read]], ref)
    assert first == same_a and first != second and first != hashed_a
    no_path = hashed([[{"sha256": None}], [{"sha256": None}], [{"sha256": "h1"}]], {"sha256": pl.Utf8})
    assert no_path[0] == no_path[1] != no_path[2]


def test_no_scores_give_no_interval_and_no_test() -> None:
    assert all(np.isnan(bootstrap_interval(np.array([]))))
    assert bootstrap_interval(np.array([0.25])) == (0.25, 0.25)
    empty = paired_test(np.array([]), np.array([]))
    assert (empty.n, empty.test) == (0, "")
    numbers = (empty.baseline_mean, empty.candidate_mean, empty.delta, empty.ci_low, empty.ci_high, empty.p_value)
    assert all(isinstance(x, float) and np.isnan(x) for x in numbers)


def test_paired_rows_are_the_same_found_by_position_or_by_join(tmp_path: Path) -> None:
    """The candidate lists the samples in another order, with one the baseline lacks: each paired sample's rows,
    in the baseline's order with its position there, are found by position in the files as runs write them and
    by a join on (id, evaluator) in a results file in another order; the two agree."""
    from vision_eval.compare.paired_rows import paired_rows, side_samples
    from vision_eval.pairing import pair

    def run(folder: Path, scores: dict[str, float]) -> Path:
        rows = [{"id": i, "input": f"q{i}", "output": str(s), "expected_output": "x"} for i, s in scores.items()]
        stack = {"score": {"type": "python", "function": "tests.fixtures.py_judges:score_from_output"},
                 "em": {"type": "exact_match"}}  # fmt: skip
        ve.evaluate(rows, evaluators=stack, output_dir=folder, run={"write_report": False, "progress": False})
        return folder

    base = load_side(run(tmp_path / "base", {"a": 0.25, "b": 0.5, "c": 0.75, "d": 1.0}))
    cand_dir = run(tmp_path / "cand", {"c": 0.0, "a": 1.0, "z": 0.5, "b": 0.5})
    shuffled = tmp_path / "shuffled"
    shutil.copytree(cand_dir, shuffled)
    results = pl.read_parquet(cand_dir / "results.parquet")
    results.sample(fraction=1.0, shuffle=True, seed=3).write_parquet(shuffled / "results.parquet")
    wanted = [("a", 0, 0.25, 1.0), ("b", 1, 0.5, 0.5), ("c", 2, 0.75, 0.0)]
    for cand in (load_side(cand_dir), load_side(shuffled)):
        samples = side_samples(base, ["input"]), side_samples(cand, ["input"])
        paired, _ = pair(samples[0].hashes, samples[1].hashes)
        frames = dict(paired_rows(base, cand, paired, samples, ["em", "score", "absent"]))
        assert list(frames) == ["em", "score"]
        score = frames["score"]
        assert score.columns == ["sample_id", "_pos_b", "status", "score", "passed", "status_c", "score_c", "passed_c"]
        assert score.select("sample_id", "_pos_b", "score", "score_c").rows() == wanted


@pytest.mark.parametrize("samples", [5, 6])
def test_a_side_repeating_sample_ids_names_the_first_five(tmp_path: Path, samples: int) -> None:
    """The same run twice in one folder is not shards of one run: the ids it repeats are named, five at most."""
    run, _ = runs_of_scores(tmp_path / "one", [1.0] * samples, [1.0])
    for copy in ("a", "b"):
        shutil.copytree(run, tmp_path / "twice" / copy)
    with pytest.raises(NotARun) as refused:
        compare(load_side(run), load_side(tmp_path / "twice"))
    shown = "r000, r001, r002, r003, r004" + (", ..." if samples > 5 else "")
    assert str(refused.value) == (
        f"{tmp_path / 'twice'} holds {samples} sample id(s) more than once ({shown}): several runs of the same "
        "samples? name one of them"
    )


def test_a_bootstrap_is_its_seeds_and_counts_few_values_each_repeated() -> None:
    """The same seed (0 unless given) gives the same interval, by every way of drawing; values are drawn as counts
    when there are at most 1,000 distinct ones, each 8 times on average or more."""
    from vision_eval.stats import few_distinct

    binned = np.random.default_rng(5).normal(size=30_000)  # 30,000 x 2,000 resamples: drawn by bins
    rows = np.random.default_rng(6).normal(size=50)
    counted = np.repeat(np.arange(10.0), 8)
    for values, resamples in ((binned, 2000), (rows, 1000), (counted, 1000)):
        once = bootstrap_interval(values, seed=3, resamples=resamples)
        assert bootstrap_interval(values, seed=3, resamples=resamples) == once
        assert bootstrap_interval(values, seed=4, resamples=resamples) != once
        assert bootstrap_interval(values, resamples=resamples) == bootstrap_interval(values, 0, resamples)
    assert [few_distinct(np.arange(10.0), n) for n in (79, 80)] == [False, True]
    assert [few_distinct(np.arange(float(k)), 8 * k) for k in (1000, 1001)] == [True, False]


def test_a_nested_content_column_is_its_values() -> None:
    """A mapped column holding lists or records (the choices an evaluator reads) is content: other values, another
    sample."""
    from vision_eval.pairing import content_hashes

    frame = pl.LazyFrame({
        "id": ["x", "y", "z"], "input": ["q", "q", "q"],
        "choices": [["a", "b"], ["a", "c"], ["a", "b"]],
        "meta": [{"k": 1}, {"k": 1}, {"k": 2}],
    })  # fmt: skip
    choices = content_hashes(frame, ["input", "choices"]).collect()["_content"].to_list()
    assert choices[0] != choices[1] and choices[0] == choices[2]
    meta = content_hashes(frame, ["input", "meta"]).collect()["_content"].to_list()
    assert meta[0] == meta[1] != meta[2]


def test_many_rows_below_the_binning_size_are_drawn_row_by_row_as_scipy_draws_them() -> None:
    """6,000 distinct values x 10,000 resamples (a comparison's default) are past the numbers drawn one by one, but
    too few rows to bin (25,600): drawn row by row, in chunks, the interval is scipy's percentile bootstrap's."""
    values = np.random.default_rng(8).normal(size=6000)
    rng = np.random.default_rng(2)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap((values,), np.mean, n_resamples=10_000, method="percentile", batch=1000, **kw)
    wanted = (res.confidence_interval.low, res.confidence_interval.high)
    assert bootstrap_interval(values, seed=2, resamples=10_000) == pytest.approx(wanted, abs=1e-12)
