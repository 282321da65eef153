"""A damaged checkpoint, as an operator meets it after a Ctrl-C: every file is checked before anything is sent;
damage is exit 2 naming the file and what can be recovered; ``run.resume_damaged=true`` resumes without sending
again any call the journal proves finished, and counts each finished call it does send again (console, run.json).

The checkpoint is made once, for real: a judge run against the fake provider, stopped by SIGINT once a few batches
are saved (the process ends, SQLite merges its journal into ``calls.sqlite``). Each case damages a copy, then
counts the requests the fake receives. With ``R`` rows, ``J`` finished calls (``calls.keys``) and ``P`` whole
parts (one row each), a resume whose journal is intact sends exactly ``R - J`` requests; one whose journal is
lost sends ``R - P`` and says that ``J - P`` of them were sent again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import RED, shape_png

import vision_eval as ve
from vision_eval.errors import CheckpointDamaged
from vision_eval.testing.fake_providers import FakeProviders

ROWS = 24
STACK = {"desc": {"type": "llm_judge", "prompt": "image-description"}}
SCRIPT = """
import sys, json
import vision_eval as ve
rows = json.loads(open(sys.argv[1]).read())
judge = {"model": "openai/gpt-4o-mini", "api_base": sys.argv[2], "api_key": "k", "cache": False, "max_concurrency": 2}
ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}}, judge=judge,
            run={"batch_size": 4}, output_dir=sys.argv[3])
"""


@dataclass
class Interrupted:
    """A run stopped by Ctrl-C with its checkpoint, and the fake provider that served it."""

    rows: list[dict[str, Any]]
    run: Path
    fake: Any

    @property
    def checkpoint(self) -> Path:
        return self.run / "checkpoint"

    def judge(self) -> dict[str, Any]:
        return {"model": "openai/gpt-4o-mini", "api_base": self.fake.openai_base, "api_key": "k", "cache": False,
                "max_concurrency": 2}  # fmt: skip


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory, subprocess_env: dict[str, str]) -> Iterator[Interrupted]:
    folder = tmp_path_factory.mktemp("interrupted")
    (folder / "red.png").write_bytes(shape_png(RED, 2))
    rows = [{"id": f"s{i}", "output": f"red shapes, row {i}", "images": [str(folder / "red.png")]} for i in range(ROWS)]
    (folder / "rows.json").write_text(json.dumps(rows))
    with FakeProviders(latency=0.2) as fake:
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder / "rows.json"), fake.openai_base,
                                 str(folder / "run")], env=subprocess_env, stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 60
        while fake.calls < 13 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
        fake.wait_idle()
        yield Interrupted(rows, folder / "run", fake)


@pytest.fixture(scope="module", name="subprocess_env")
def module_env() -> dict[str, str]:
    from conftest import REPO

    env = dict(os.environ)
    env.pop("HYDRA_FULL_ERROR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.fixture
def copy(interrupted: Interrupted, tmp_path: Path) -> Interrupted:
    """A fresh copy of the interrupted run (each case damages its own)."""
    shutil.copytree(interrupted.run, tmp_path / "run")
    return Interrupted(interrupted.rows, tmp_path / "run", interrupted.fake)


def finished_calls(checkpoint: Path) -> int:
    return len(set((checkpoint / "calls.keys").read_text().split()))


def parts(checkpoint: Path) -> list[Path]:
    return sorted(p for p in (checkpoint / "desc").iterdir() if not p.name.startswith("."))


def zero(path: Path) -> None:
    path.write_bytes(b"\0" * path.stat().st_size)


def halve(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def forget_records(checkpoint: Path) -> None:
    """The journal still reads fine, but its records are gone."""
    with sqlite3.connect(checkpoint / "calls.sqlite") as conn:
        conn.execute("DELETE FROM calls")


def zero_journal_and_halve_a_part(checkpoint: Path) -> None:
    zero(checkpoint / "calls.sqlite")
    halve(parts(checkpoint)[0] / "results.part")


@dataclass(frozen=True)
class Damage:
    name: str
    harm: Callable[[Path], None]
    says: str
    """What the exit-2 message says about the damaged file."""
    journal_lost: bool = False
    """The journal cannot answer the run's finished calls any more (they are sent again, counted)."""
    part_lost: bool = False


DAMAGES = [
    Damage("zeroed_journal", lambda c: zero(c / "calls.sqlite"), "calls.sqlite: not a readable SQLite journal "
           "(file is not a database)", journal_lost=True),
    Damage("half_truncated_journal", lambda c: halve(c / "calls.sqlite"), "calls.sqlite: not a readable SQLite "
           "journal (database disk image is malformed)", journal_lost=True),
    Damage("journal_that_lost_its_records", forget_records, "calls.sqlite: lost the records of", journal_lost=True),
    Damage("garbage_manifest", lambda c: (c / "manifest.json").write_text("}{ not json"), "manifest.json: not valid"),
    Damage("truncated_part", lambda c: halve(parts(c)[0] / "results.part"), "results.part is ", part_lost=True),
    Damage("zeroed_part", lambda c: zero(parts(c)[1] / "fields.part"), "fields.part is not a whole Parquet file",
           part_lost=True),
    Damage("deleted_part_file", lambda c: (parts(c)[0] / "dimensions.part").unlink(), "dimensions.part is missing",
           part_lost=True),
    Damage("zeroed_journal_and_truncated_part", zero_journal_and_halve_a_part,
           "calls.sqlite: not a readable SQLite journal", journal_lost=True, part_lost=True),
]  # fmt: skip


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_a_damaged_checkpoint_is_refused_before_anything_is_sent_then_resumes_paying_only_what_it_must(
    damage: Damage, copy: Interrupted
) -> None:
    checkpoint = copy.checkpoint
    recorded, whole = finished_calls(checkpoint), len(parts(checkpoint))
    assert 0 < whole <= recorded < ROWS, (whole, recorded)
    damage.harm(checkpoint)
    whole -= damage.part_lost
    fake = copy.fake
    before = fake.wait_idle()
    with pytest.raises(CheckpointDamaged) as refused:
        ve.evaluate(copy.rows, STACK, copy.judge(), run={"batch_size": 4, "resume": str(copy.run)})
    message = str(refused.value)
    assert damage.says in message and "What can be recovered: " in message, message
    assert f"{whole} of {len(parts(checkpoint))} finished batches are whole" in message, message
    assert "run.resume_damaged=true" in message, message
    assert fake.wait_idle() == before  # nothing was sent

    result = ve.evaluate(copy.rows, STACK, copy.judge(),
                         run={"batch_size": 4, "resume": str(copy.run), "resume_damaged": True})  # fmt: skip
    sent = fake.wait_idle() - before
    info = json.loads((copy.run / "run.json").read_text())
    if damage.journal_lost:
        assert sent == ROWS - whole and info["scheduler"]["resent"] == recorded - whole, (sent, info["scheduler"])
    else:  # every call the journal proves finished came from it
        assert sent == ROWS - recorded and info["scheduler"]["resent"] == 0, (sent, info["scheduler"])
    assert result.exit_code == 0 and any(damage.says.split(":")[0] in item for item in info["set_aside"])
    out = pl.read_parquet(copy.run / "results.parquet")
    assert sorted(out["sample_id"]) == sorted(r["id"] for r in copy.rows)  # every row once, none lost
    assert out["status"].unique().to_list() == ["processed"] and not checkpoint.exists()


def test_the_command_line_says_it_in_one_line_with_exit_2_and_sends_no_preflight(
    copy: Interrupted, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    zero(copy.checkpoint / "calls.sqlite")
    (copy.checkpoint / "manifest.json").write_text("")  # (the run was not made by this command line's config)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in copy.rows))
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "judged.yaml").write_text("desc:\n  type: llm_judge\n  prompt: image-description\n")
    before = copy.fake.wait_idle()
    done = subprocess.run(
        [sys.executable, "-m", "vision_eval.cli", f"--config-dir={tmp_path / 'conf'}", "evaluators=judged",
         f"dataset.path={tmp_path / 'rows.jsonl'}", "judge=openai", f"judge.api_base={copy.fake.openai_base}",
         "judge.cache=false", f"run.resume={copy.run}", "run.batch_size=4", "hydra.run.dir=again"],
        cwd=tmp_path, env={**subprocess_env, "OPENAI_API_KEY": "sk-checkpoint-damage-000"}, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("vision-eval: config error: run.resume: the checkpoint in") and len(lines) == 2, lines
    assert "calls.sqlite: not a readable SQLite journal" in lines[0] and "manifest.json: not valid" in lines[0]
    assert lines[1] == "nothing was evaluated."
    assert copy.fake.wait_idle() == before  # checked before the preflight request
