"""The judge-agents demo: the shipped configs compose and run, the images drift as documented,
and the shipped guidelines are retrievable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
from conftest import REPO

import vision_eval
from vision_eval.agents.definitions import load_agents
from vision_eval.agents.documents import load_chunks
from vision_eval.agents.retrieval import LexicalIndex

DEMO = REPO / "datasets" / "agents_demo"


def test_demo_rows_and_size() -> None:
    rows = [json.loads(line) for line in (DEMO / "agents_demo.jsonl").read_text().splitlines()]
    assert len(rows) == 20
    assert {
        "brief_id",
        "brief",
        "prompt",
        "images",
        "iteration",
        "max_iterations",
        "previous_scores",
        "reference_image",
    } <= set(rows[0])
    assert rows[4]["previous_scores"] == [55, 63]  # acme-cola iteration 3
    total = sum(p.stat().st_size for p in DEMO.rglob("*") if p.is_file() and p.suffix != ".py")
    assert total < 1_000_000


def test_similarity_drifts_toward_and_away_from_the_brief() -> None:
    result = vision_eval.evaluate(str(DEMO / "agents_demo.jsonl"), evaluators={"sim": {"type": "image_similarity"}})
    scores = result.results.select(pl.col("sample_id"), pl.col("score"), pl.col("status")).with_columns(
        pl.col("sample_id").str.extract(r"^(.*)-it").alias("brief"),
        pl.col("sample_id").str.extract(r"-it(\d+)-").cast(pl.Int64).alias("iteration"),
    )
    assert scores["status"].unique().to_list() == ["processed"]
    best = scores.group_by("brief", "iteration").agg(pl.col("score").max()).sort("brief", "iteration")
    cola = best.filter(pl.col("brief") == "acme-cola")["score"].to_list()
    tea = best.filter(pl.col("brief") == "bluebird-tea")["score"].to_list()
    assert cola == sorted(cola) and cola[-1] > cola[0] + 0.2  # toward the brief
    assert tea == sorted(tea, reverse=True) and tea[0] > tea[-1] + 0.2  # away from it


def test_guidelines_retrieval_for_a_demo_brief(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VISION_EVAL_CACHE_DIR", str(tmp_path))
    rows = [json.loads(line) for line in (DEMO / "agents_demo.jsonl").read_text().splitlines()]
    (agent,) = load_agents(
        [
            {
                "template": "brand_compliance",
                "documents": ["guidelines/acme-brand.md", "guidelines/bluebird-packaging.docx"],
            }
        ]
    )
    chunks = [c for path in agent.document_paths(DEMO) for c in load_chunks(path, agent.rag.chunk_chars)]
    assert {c.document for c in chunks} == {"acme-brand.md", "bluebird-packaging.docx"}
    index = LexicalIndex(chunks)
    tea = next(r for r in rows if r["brief_id"] == "bluebird-tea")
    found = index.search(tea["brief"] + "\n" + tea["prompt"], agent.rag.top_k, agent.rag.similarity_threshold)
    assert found and found[0].document == "bluebird-packaging.docx"


def test_cli_runs_the_agents_demo(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vision_eval.cli", "dataset=agents_demo", "evaluators=agents_demo", "hydra.run.dir=run"],
        cwd=tmp_path,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = pl.read_parquet(tmp_path / "run" / "results.parquet")
    similarity = results.filter(pl.col("evaluator") == "reference_similarity")
    assert similarity.height == 20 and set(similarity["status"]) == {"processed"}
    dims = pl.read_parquet(tmp_path / "run" / "dimensions.parquet")
    assert set(dims["dimension"]) == {"ssim", "phash", "histogram"}
    # offline (no judge) the agent panel plans its calls: 4 agents x 20 images, guideline chunks retrieved
    panel = results.filter(pl.col("evaluator") == "panel")
    assert panel.height == 20 and set(panel["status"]) == {"skipped"}
    details = [json.loads(d) for d in panel["details"]]
    assert all(len(d["agents"]) == 4 for d in details)
    tea = next(d for d in details if d["panel"]["brief_id"] == "bluebird-tea")
    assert tea["agents"]["brand_compliance"]["chunks"][0]["document"] == "bluebird-packaging.docx"
    assert "## Reference Guidelines" in tea["agents"]["brand_compliance"]["request"]["text"]
    assert tea["agents"]["composition"]["chunks"] == []
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["metrics"]["panel"]["planned_calls"] == 80
