"""The entry points: run a validated config, or evaluate Python data directly.

A run: build the stack (config errors first), open the dataset as a stream of batches and refuse repeated ids
(reading the id column alone), check the columns on the first batch, check every model (keys, prices for a
budget, one tiny request: :mod:`vision_eval.llm.preflight`), claim the run directory, then evaluate batch by
batch (:mod:`vision_eval.engine`: the candidate first, each finished part saved at once), add up the summary,
metrics and gates from the saved parts (:mod:`vision_eval.finish`) and write the files. ``run.dry_run`` stops
after building the requests (:mod:`vision_eval.dryrun`).
"""

from __future__ import annotations

import shutil
import sys
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.checkpoint import Checkpoints, config_fingerprint
from vision_eval.checkpoint_health import Health
from vision_eval.columns import image_columns as evaluator_image_columns
from vision_eval.config import AppConfig, ConfigSources, DatasetConfig, JudgeConfig, validate_config
from vision_eval.data import DatasetStream, open_dataset, samples_frame
from vision_eval.dryrun import evaluator_lines, plan_table
from vision_eval.engine import run_stack, start_warm_ups
from vision_eval.errors import ConfigError, Interrupted, OutputsNotWritten
from vision_eval.evaluator import EvalContext
from vision_eval.exit_codes import EXIT_INCOMPLETE, worst
from vision_eval.finish import build_result, dataset_counts, interrupted_hint, not_written, run_info_head
from vision_eval.images.sent import sent_record
from vision_eval.llm.budget import Budget
from vision_eval.llm.preflight import key_problems, model_uses, preflight
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.output import EvalResult
from vision_eval.parts import Ledger
from vision_eval.prechecks import check_stack
from vision_eval.progress import Progress
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, conform
from vision_eval.rundir import CHECKPOINT, RunDir, claim_or_continue, claim_resume, new_run_id
from vision_eval.secrets import Secrets
from vision_eval.stack import build_stack

PLANNED_OUTPUT = "(the candidate's reply)"
"""A dry run's ``output`` for the evaluators' plans when a candidate would write it."""


def _dry_run(
    config: AppConfig,
    context: EvalContext,
    evaluators: list[Any],
    candidate: Any,
    stream: DatasetStream,
    uses: list[Any],
) -> EvalResult:
    from vision_eval.candidate import plan_outputs
    from vision_eval.dryrun import _line

    context.dry_run = True
    lines = []
    warnings = key_problems(uses)
    planned: dict[str, Any] = {"calls": 0, "estimated_input_tokens": 0, "image_tokens": 0,
                               "image_tokens_sized_otherwise": 0, "sized_otherwise": "", "errors": []}  # fmt: skip

    async def plan(batch: pl.DataFrame) -> pl.DataFrame:
        counted = plan_outputs(batch, candidate, context)
        for key in ("calls", "estimated_input_tokens", "image_tokens", "image_tokens_sized_otherwise", "errors"):
            planned[key] += counted[key]
        planned["sized_otherwise"] = counted["sized_otherwise"] or planned["sized_otherwise"]
        if "output" not in batch.columns:  # the judges' plans show where the candidate's reply would go
            batch = batch.with_columns(pl.lit(PLANNED_OUTPUT, pl.Utf8).alias("output"))
        return batch

    graded = [e for e in evaluators if e.is_async]
    ledger = Ledger(graded, Checkpoints(None))
    run_stack(graded, stream.batches(), ledger, total=stream.total, batch_size=config.run.batch_size,
              prepare=plan if candidate is not None else None)  # fmt: skip
    if candidate is not None:
        lines.append(_line("candidate", candidate, planned["calls"], planned["estimated_input_tokens"], planned))
        warnings += [f"candidate request cannot be built for {e}" for e in planned["errors"][:5]]
    for evaluator in graded:
        lines += evaluator_lines(evaluator, ledger.frame("results", evaluator.name).collect())
    info = {"dry_run": True, "plan": plan_table(lines), "warnings": warnings, "exit_code": 0, "problems": [],
            "images_sent": sent_record(context)}  # fmt: skip
    samples = ledger.samples().collect() if stream.total else samples_frame(stream.head())
    empty = {name: conform(pl.DataFrame(), schema) for name, schema in (("d", DIMENSION_SCHEMA), ("f", FIELD_SCHEMA))}
    return EvalResult(ledger.frame("results").collect(), empty["d"], empty["f"], samples, run_info=info)


def _claim(config: AppConfig) -> tuple[RunDir | None, str, Health | None]:
    """The run's directory and id, and for a resume what the check of its checkpoint found (done here, before
    anything is sent)."""
    claimed: tuple[RunDir, str, Health | None]
    if config.run.resume:
        claimed = claim_resume(config.run.resume, config_fingerprint(config), config.run.resume_damaged)
    elif config.run.output_dir:
        claimed = claim_or_continue(config.run.output_dir, config_fingerprint(config), config.run.resume_damaged)
    else:
        return None, new_run_id(), None
    if claimed[0].note:  # said at once: a run on a cluster may be stopped again before its summary
        print(f"vision-eval: {claimed[0].note}", file=sys.stderr)
    return claimed


def dataset_from_config_folder(dataset: DatasetConfig, sources: ConfigSources | None) -> DatasetConfig:
    """``dataset.path`` as written, or, when it is relative and names nothing from the working folder, the same path
    from the config folder whose ``dataset/`` file set it (``vision-eval init`` writes paths relative to it)."""
    path = Path(dataset.path).expanduser() if dataset.path else None
    source = sources.files.get("dataset") if sources is not None else None
    if path is None or path.is_absolute() or path.exists() or not source or not source.endswith((".yaml", ".yml")):
        return dataset
    beside = Path(source).parent.parent / path
    return dataset.model_copy(update={"path": str(beside)}) if beside.exists() else dataset


def run_config(config: AppConfig, data: Any = None, sources: ConfigSources | None = None) -> EvalResult:
    """Run a validated config (``data`` replaces the configured dataset when given).

    Raises ``ConfigError`` / ``PreflightError`` / ``DatasetError`` / ``CheckpointDamaged`` (exit 2) before anything
    is evaluated, ``OutputsNotWritten`` (exit 3) when the disk refused a file before the run could finish,
    ``Interrupted`` (a ``KeyboardInterrupt``) on Ctrl-C; each message says what is kept and how to resume.
    Otherwise returns the result, whose ``exit_code`` and ``problems`` say whether every gate held (an output file
    the disk refused at the end is one of its problems, exit 3)."""
    started = time.perf_counter()
    context = EvalContext(judge=config.judge if config.judge.enabled else None, run=config.run)
    evaluators = build_stack(config.evaluators, context, sources)  # config errors surface before any loading
    start_warm_ups(evaluators)
    candidate = config.candidate if config.candidate.enabled else None
    if candidate is not None:
        from vision_eval.candidate import check_candidate

        try:
            check_candidate(candidate)
        except ValueError as exc:
            raise ConfigError(
                "candidate.prompt", str(exc), sources.file_for("candidate") if sources else None
            ) from None
    image_columns = evaluator_image_columns(evaluators, candidate.images if candidate is not None else ())
    if data is None:
        config = config.model_copy(update={"dataset": dataset_from_config_folder(config.dataset, sources)})
    stream = open_dataset(config.dataset, data, config.run.limit, config.run.shard, image_columns, context=context)
    stream.check_ids(config.run.batch_size)  # repeated ids: refused before anything is evaluated
    stream.open(config.run.batch_size)
    head = stream.head()
    if candidate is not None and "output" not in head.columns:
        head = head.with_columns(pl.lit(None, pl.Utf8).alias("output"))
    check_stack(head, evaluators, config.dataset, sources)  # still before any paid call
    uses = model_uses(evaluators, candidate)
    secrets = Secrets.of_models([u.config for u in uses] + [config.judge])
    context.services["secrets"] = secrets
    if config.run.dry_run:
        return _dry_run(config, context, evaluators, candidate, stream, uses)

    rundir, run_id, health = _claim(config)
    try:
        return _run(config, sources, context, evaluators, candidate, stream, uses, secrets, (rundir, run_id, health),
                    started)  # fmt: skip
    finally:
        if rundir is not None:
            rundir.release()


IN_MEMORY_RESULT_ROWS = 1_000_000
"""A run without an output directory keeps its parts in memory up to this many result rows (rows x evaluators);
a larger one keeps them in a temporary folder, removed when its result is garbage-collected."""


def _store(config: AppConfig, output_dir: Path | None, result_rows: int) -> Checkpoints:
    """Where the parts go: the run's checkpoint (resumable), a temporary folder without checkpoints, or, for a run
    without an output directory, memory (a small run) or a temporary folder (a large one)."""
    if output_dir is None:
        return Checkpoints(None) if result_rows <= IN_MEMORY_RESULT_ROWS else Checkpoints.temporary(None)
    if config.run.checkpoint:
        return Checkpoints(output_dir / CHECKPOINT)
    return Checkpoints.temporary(output_dir)


def _run(
    config: AppConfig,
    sources: ConfigSources | None,
    context: EvalContext,
    evaluators: list[Any],
    candidate: Any,
    stream: DatasetStream,
    uses: list[Any],
    secrets: Secrets,
    claimed: tuple[RunDir | None, str, Health | None],
    started: float,
) -> EvalResult:
    rundir, run_id, health = claimed
    scheduler = get_scheduler(context)
    preflight(
        uses, scheduler, budget=config.run.max_cost_usd is not None, send=config.run.preflight, scrub=secrets.scrub
    )
    output_dir = rundir.path if rundir is not None else None
    store = _store(config, output_dir, stream.total * len(evaluators))
    ledger = Ledger(evaluators, store, run_id)
    with _stopped(store, ledger, output_dir, scheduler, sources):
        if store.enabled:
            assert store.journal_dir is not None
            store.start(run_id, config_fingerprint(config), config.run.shard)
            scheduler.use_journal(store.journal_dir, config.run.max_cost_usd, health.lost_calls if health else None)
        else:
            scheduler.budget = Budget(config.run.max_cost_usd)
        loaded = time.perf_counter()
        progress = Progress.choose(config.run.progress, config.run.progress_interval_s)
        progress.jobs = scheduler.batch_jobs
        for evaluator in evaluators:
            progress.add(evaluator.name, stream.total)
        prepare = None
        if candidate is not None:
            from vision_eval.candidate import CANDIDATE, Generator

            progress.add(CANDIDATE, stream.total)
            generator = Generator(candidate, context, progress)

            async def prepare(batch: pl.DataFrame) -> pl.DataFrame:
                progress.begin(CANDIDATE)
                return secrets.scrub_frame(await generator(batch), ["candidate_error"])

        calls = candidate is not None or any(e.calls_models and e.models() for e in evaluators)  # judge=none: none
        with progress:
            stack = run_stack(evaluators, stream.batches(), ledger, total=stream.total,
                              batch_size=config.run.batch_size, progress=progress, scrub=secrets.scrub_frame,
                              prepare=prepare, session=scheduler.session if calls else None,
                              fault=lambda: scheduler.fault)  # fmt: skip
            if candidate is not None:
                progress.end(CANDIDATE)
        if not stack.dataset["rows"]:  # no row evaluated: samples.parquet still has the dataset's columns
            ledger.put_samples(0, samples_frame(stream.head()))

        finished = time.perf_counter()
        info = run_info_head(config, sources, run_id, rundir)
        info["dataset"] = dataset_counts(stack, stream.head(), context.dataset_root)
        # what a merge of this run's shards must add up to: the rows selected before run.shard takes its share
        info["dataset"]["selected"] = stream.unsharded
        info["dataset"]["first"] = stream.first  # where its rows go back among them (a shard's are consecutive)
        info["timings"] = {
            "load_s": round(loaded - started, 4),
            "evaluate_s": round(finished - loaded, 4),
            "total_s": round(finished - started, 4),
            "per_evaluator_s": stack.seconds,
        }
        info["spending"] = {"spent_usd": round(scheduler.budget.spent, 6), "budget_usd": config.run.max_cost_usd}
        info["scheduler"] = scheduler.stats.as_dict()
        info["images_sent"] = sent_record(context)
        if health is not None and health.damaged:
            info["set_aside"] = [f"{d.path}: {d.problem}" for d in health.damaged]
        result = build_result(ledger, evaluators, stack, scheduler, config.run.max_error_rate, info, output_dir,
                              config.run.allow_nothing_scored)  # fmt: skip
        try:
            if output_dir is not None:
                result.write(output_dir)
            if config.run.junit:
                from vision_eval.junit import write_junit

                junit = Path(config.run.junit)
                columns = {
                    e.name: {k: v[0] for k, v in e.settings.columns.mapped().items() if k != "images"}
                    for e in evaluators
                }
                junit_file = output_dir / junit if output_dir else junit
                write_junit(result.results, info["gates"], junit_file, samples=result.lazy("samples"), columns=columns)
        except OutputsNotWritten as exc:  # a full disk, a read-only folder: say so, keep what resumes the run
            info["problems"].append(not_written(exc, store, output_dir, result.written))
            info["exit_code"] = worst([info["exit_code"], EXIT_INCOMPLETE])
            if not store.enabled and store.directory is not None:  # parts nothing resumes from: gone with the result
                weakref.finalize(result, shutil.rmtree, store.directory, True)
            return result
        if output_dir is not None and (info["complete"] or not store.enabled):
            store.remove()
        return result


@contextmanager
def _stopped(
    store: Checkpoints, ledger: Ledger, output_dir: Path | None, scheduler: Any, sources: ConfigSources | None
) -> Iterator[None]:
    """While a run evaluates: Ctrl-C, or a write the disk refuses, stops it with one line that says what is kept
    and how to go on (:class:`Interrupted`, :class:`OutputsNotWritten`), and how many finished calls a resume
    would pay for again; a config a later batch's values refute (:class:`ConfigError`) says where it stopped.
    Parts nothing resumes from are removed."""
    try:
        yield
    except KeyboardInterrupt:
        if not store.started:
            store.remove()
        raise Interrupted(interrupted_hint(store, ledger, output_dir)) from None
    except ConfigError as exc:  # a later batch's value the config cannot read (a ``where`` filter's cast)
        finished = ledger.saved_parts()
        store.remove()  # a resume needs the same config, which would stop at the same batch again
        stopped = f"the run stopped there, after {finished} finished batch{'' if finished == 1 else 'es'}"
        if scheduler.budget.spent > 0:  # what those batches cost: a rerun pays for their calls again, or its cache does
            stopped += f" (model calls: ${scheduler.budget.spent:.6f} spent)"
        file = exc.file or (sources.file_for(exc.key) if sources else None)
        raise ConfigError(exc.key, exc.message, file, f"{stopped}; fix it and run again") from None
    except OutputsNotWritten as exc:
        if not store.started:
            store.remove()
        message = not_written(exc, store, output_dir, [], ledger)
        if scheduler.unjournaled:
            message += (
                f"; {scheduler.unjournaled} calls sent could not be recorded in the journal (the disk refused them, or "
                "they were in flight when the run stopped): a resume sends "
                "those outside a saved batch again (they are paid twice)"
            )
        raise OutputsNotWritten(exc.path, exc.reason, message) from exc


def evaluate(
    data: Any,
    evaluators: Mapping[str, Mapping[str, Any]],
    judge: JudgeConfig | Mapping[str, Any] | str | None = None,
    *,
    dataset: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
    candidate: Mapping[str, Any] | str | None = None,
) -> EvalResult:
    """Evaluate ``data`` with a stack of evaluators.

    ``data``: a Polars frame, a list of dicts, a file or folder path, a hub id or an HF Dataset.
    ``evaluators``: name -> settings (each with ``type`` or ``_target_``).
    ``judge``: a ``JudgeConfig``, its settings as a mapping, a litellm model id, or ``None``.
    ``dataset`` / ``run``: extra dataset options (``columns``, ``limit``...) and run options.
    ``candidate``: a model under test (settings or a litellm model id) that first produces ``output``.

    Raises ``ConfigError`` or ``PreflightError`` when nothing could be evaluated, and the process faults
    :func:`run_config` names; otherwise the result's ``exit_code`` and ``problems`` say whether the run's gates held
    (as ``vision-eval``'s exit code does).
    """
    if isinstance(judge, str):
        judge = {"model": judge}
    elif isinstance(judge, JudgeConfig):
        judge = judge.model_dump()
    run_options = dict(run or {})
    if output_dir is not None:
        run_options["output_dir"] = str(output_dir)
    raw: dict[str, Any] = {
        "dataset": dict(dataset or {}),
        "evaluators": {name: dict(spec) for name, spec in evaluators.items()},
        "judge": dict(judge or {}),
        "run": run_options,
        "candidate": {"model": candidate} if isinstance(candidate, str) else dict(candidate or {}),
    }
    if isinstance(data, str | Path) and "path" not in raw["dataset"]:
        raw["dataset"]["path"] = str(data)
        data = None
    return run_config(validate_config(raw), data)
