"""Every script in ``benchmarks/`` runs, at a tiny size, and prints its ratio against a baseline measured in the same
run: a benchmark that no longer runs fails here instead of rotting unseen. Nothing here times anything (the numbers
of a tiny run mean nothing); the scripts' own printed figures are for people running them at size."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

SMOKE_ARGS: dict[str, list[str]] = {
    "bench_bbox.py": ["--rows", "2000", "--repeat", "1"],
    "bench_benchmark_metrics.py": ["--rows", "2000", "--repeat", "1"],
    "bench_cache.py": ["--procs", "2", "--calls", "20", "--rollback-calls", "5", "--concurrency", "4", "--repeat", "1"],
    "bench_code_validators.py": ["--rows", "2000", "--repeat", "1", "--judge-rows", "200", "--process-rows", "3"],
    "bench_compare.py": ["--rows", "2000", "--images", "5"],
    "bench_demo.py": ["--runs", "1"],
    "bench_engine.py": ["--rows", "2000"],
    "bench_field_accuracy.py": ["--sizes", "500"],
    "bench_intervals.py": ["--rows", "3000"],
    "bench_isolation.py": ["--rows", "2000"],
    "bench_judge_throughput.py": [
        "--calls",
        "40",
        "--baseline-calls",
        "20",
        "--concurrency",
        "8",
        "--latency",
        "0.01",
        "--repeat",
        "1",
    ],
    "bench_loading.py": ["--rows", "2000", "--images", "5"],
    "bench_out_of_core.py": ["--rows", "3000", "--batch-size", "1000"],
    "bench_photos.py": ["--photos", "4", "--concurrency", "2", "--rounds", "1", "--psnr-photos", "2"],
    "bench_report.py": ["2000", "--images", "5"],
    "bench_shards.py": ["--rows", "4000", "--jsonl-rows", "800"],
    "bench_skipped.py": ["--rows", "4000"],
    "bench_startup.py": ["--runs", "1"],
}
"""Each benchmark's smoke run (a new benchmark needs an entry: the first test fails without one)."""

RATIO = re.compile(r"\d(?:\.\d+)?\s*x\b|\d(?:\.\d+)?%|ratio", re.IGNORECASE)


def test_every_benchmark_has_a_smoke_run() -> None:
    assert sorted(p.name for p in BENCHMARKS.glob("*.py")) == sorted(SMOKE_ARGS)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE_ARGS))
def test_benchmark_runs_at_a_tiny_size(script: str, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *SMOKE_ARGS[script]],
        cwd=tmp_path,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert RATIO.search(proc.stdout), proc.stdout[-2000:]
