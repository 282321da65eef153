"""Does a merge of shards hold what it should? Before a report or a comparison adds up the shards of a run
(``run.shard=i/n`` in each run.json), :func:`check_shards` looks at every group of shards (runs that differ only in
placement) and names what is wrong, each with the command that finishes it:

* a shard ``i/n`` with no finished run: missing, still running (a live lock), or dead (an unfinished run whose
  holder is gone: resume it);
* a shard finished twice (a retried job beside a stale one), or an unfinished attempt beside the finished one;
* a shard whose row count is not its share of the dataset's selection (run.json ``dataset.selected``), or that did
  not complete;
* an id in more than one shard (a single run refuses a dataset that repeats an id).

An empty list means the merge is complete.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import parse_shard, shard_range
from vision_eval.launch import holder
from vision_eval.runs import group_key, read_json
from vision_eval.wording import counted

LOCK = ".vision_eval.lock"
MANIFEST = Path("checkpoint") / "manifest.json"
SHOWN_IDS = 5


@dataclass
class _Unfinished:
    """A run folder without results: a shard being run, or one that died."""

    path: Path
    shard: str | None
    dataset: Any
    running: str | None
    """Who holds its lock, when that holder may still be running."""


def _kept(count: int, index: int, every: int) -> int:
    start, stop = shard_range(count, index, every)
    return stop - start


def _unfinished(roots: Iterable[Path]) -> list[_Unfinished]:
    """Run folders under ``roots`` that hold a lock or a checkpoint but no results (checkpoints not entered)."""
    found: dict[Path, _Unfinished] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for folder, subdirs, files in os.walk(root):
            here = Path(folder)
            subdirs[:] = sorted(d for d in subdirs if d != "checkpoint")
            if "results.parquet" in files or not (LOCK in files or (here / MANIFEST).is_file()):
                continue
            manifest = read_json(here / MANIFEST)
            owner = read_json(here / LOCK) if LOCK in files else None
            running = holder.describe(owner) if owner and holder.gone(owner) is None else None
            shard = manifest.get("shard")
            dataset = (manifest.get("config") or {}).get("dataset")
            found[here.resolve()] = _Unfinished(here.resolve(), shard if isinstance(shard, str) else None, dataset,
                                                running)  # fmt: skip
    return list(found.values())


def _command(info: dict[str, Any], shard: str, where: str | None = None) -> str:
    """``vision-eval`` with the run's own overrides, this shard and ``where`` (a resume or an output folder)."""
    overrides = [str(o).lstrip("+") for o in info.get("overrides") or []]
    kept = [o for o in overrides if not o.startswith(("run.shard=", "run.resume=", "hydra.run.dir="))]
    return " ".join(
        shlex.quote(word) for word in ["vision-eval", *kept, f"run.shard={shard}", *([where] if where else [])]
    )


def _shard_of(info: dict[str, Any]) -> tuple[int, int] | None:
    text = ((info.get("config") or {}).get("run") or {}).get("shard")
    try:
        return parse_shard(str(text)) if text else None
    except ValueError:
        return None


def _repeated_ids(dirs: list[Path]) -> list[str]:
    frames = [pl.scan_parquet(d / "samples.parquet").select("id") for d in dirs if (d / "samples.parquet").is_file()]
    if len(frames) < 2:
        return []
    counts = pl.concat(frames).group_by("id").len().filter(pl.col("len") > 1)
    return [str(v) for v in counts.sort("id").head(SHOWN_IDS + 1).collect(engine="streaming")["id"]]


def _check_group(members: list[tuple[Path, dict[str, Any]]], unfinished: list[_Unfinished]) -> list[str]:
    shards = {d: _shard_of(info) for d, info in members}
    counts = {n for s in shards.values() if s for n in [s[1]]}
    if not counts:
        return []
    if len(counts) > 1 or any(s is None for s in shards.values()):
        shown = ", ".join(f"{d} ({s[0]}/{s[1]})" if s else f"{d} (not sharded)" for d, s in shards.items())
        return [f"runs of one config split into different shard counts: {shown}; merge one split only"]
    every = counts.pop()
    problems: list[str] = []
    info0 = members[0][1]
    dataset = (info0.get("config") or {}).get("dataset")
    by_index: dict[int, list[tuple[Path, dict[str, Any]]]] = {}
    for directory, info in members:
        shard = shards[directory]
        assert shard is not None
        by_index.setdefault(shard[0], []).append((directory, info))
    ours = [u for u in unfinished if u.shard and u.dataset == dataset and u.shard.endswith(f"/{every}")]
    selected = ((info0.get("dataset") or {}) or {}).get("selected")
    for index in range(every):
        name = f"{index}/{every}"
        done = sorted(by_index.get(index, []), key=lambda m: (m[0] / "run.json").stat().st_mtime)
        pending = [u for u in ours if u.shard == name]
        if not done:
            if not pending:
                problems.append(f"shard {name} is missing: run it with `{_command(info0, name)}`")
            for run in pending:
                if run.running:
                    problems.append(f"shard {name} is still running in {run.path} ({run.running}): wait for it to end")
                else:
                    problems.append(f"shard {name} died unfinished in {run.path}: finish it with "
                                    f"`{_command(info0, name, f'run.resume={run.path}')}`")  # fmt: skip
            continue
        if len(done) > 1:
            stale = ", ".join(str(d) for d, _ in done[:-1])
            problems.append(f"shard {name} was done {len(done)} times ({', '.join(str(d) for d, _ in done)}): "
                            f"keep the last and move the stale {stale} out of the folder")  # fmt: skip
        for run in pending:
            state = f"still running ({run.running})" if run.running else "stale"
            problems.append(f"shard {name} has an unfinished attempt in {run.path} ({state}) beside the finished "
                            f"{done[-1][0]}: move {run.path} out of the folder")  # fmt: skip
        directory, info = done[-1]
        rows = (info.get("counts") or {}).get("samples")
        if info.get("complete") is False:
            problems.append(f"shard {name} in {directory} did not complete: finish it with "
                            f"`{_command(info, name, f'run.resume={directory}')}`")  # fmt: skip
        elif isinstance(selected, int) and isinstance(rows, int) and rows != _kept(selected, index, every):
            problems.append(f"shard {name} in {directory} holds {counted(rows, 'row')}, not its share "
                            f"{_kept(selected, index, every)} of the {selected} selected: run it again")  # fmt: skip
    if not any("was done" in p for p in problems):
        repeated = _repeated_ids([d for d, _ in members])
        if repeated:
            shown = ", ".join(repeated[:SHOWN_IDS]) + (", ..." if len(repeated) > SHOWN_IDS else "")
            problems.append(f"ids in more than one shard ({shown}): the dataset repeats ids, which a single run "
                            "refuses; give every row its own id and run again")  # fmt: skip
    return problems


def check_shards(dirs: list[Path], roots: Iterable[str | Path] = ()) -> list[str]:
    """What is wrong with merging the shards among ``dirs`` (finished run folders); unfinished runs are looked for
    under ``roots`` (the folders named on the command line) and beside ``dirs``. Empty when complete."""
    infos = [read_json(d / "run.json") for d in dirs]
    groups: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for directory, info in zip(dirs, infos):
        groups.setdefault(group_key(info), []).append((directory, info))
    sweeps = {d.parent for d, info in zip(dirs, infos) if _shard_of(info)}
    unfinished = _unfinished(sorted({Path(r).resolve() for r in roots if Path(r).is_dir()} | sweeps))
    problems = [p for members in groups.values() for p in _check_group(members, unfinished)]
    for run in unfinished:  # killed before its checkpoint said which shard it is: it may be one of them
        if run.shard is None and run.path.parent in sweeps:
            state = f"still running ({run.running})" if run.running else "dead before it saved anything"
            problems.append(f"an unfinished run in {run.path} ({state}): let it finish, or move it out of the folder")
    return problems


def describe(problems: list[str]) -> str:
    """The problems as lines for the console."""
    return "\n".join(f"  - {p}" for p in problems)
