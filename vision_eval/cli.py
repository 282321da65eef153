"""``vision-eval``: the Hydra entry point.

vision-eval                                   # the demo, offline
vision-eval dataset=X evaluators=Y judge=Z    # compose
vision-eval -m judge=a,b                      # sweep
vision-eval --cfg job                         # show the composed config
vision-eval list | describe <type> | init <dir> [--data <file>] | compare <baseline> <candidate>   # subcommands

Exit codes: the README's table (0 every gate holds, 1 a quality gate failed, 2 a bad command line or config,
3 a run problem, 4 an internal error, 130 interrupted); whatever happens, the console gets one line, never a
traceback (:mod:`vision_eval.exits`). A sweep runs every job whatever the others do and exits with the most
severe code of its jobs.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from vision_eval._resources import conf_dir, resource
from vision_eval.exit_codes import EXIT_CONFIG, EXIT_INCOMPLETE, SWEEP_EXIT_CODES, worst
from vision_eval.secrets import clean_message, given_secrets, redact, redact_override

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from vision_eval.config import ConfigSources

# Imports stay inside the functions: `vision-eval list`, `describe` and `--help` print before the engine (Polars,
# pydantic, the evaluators) or Hydra is loaded (tests/test_startup.py).

TOP_LEVEL = ("dataset", "evaluators", "judge", "candidate", "run", "hydra")


def _register_resolvers() -> None:
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("vision_eval.resource"):
        OmegaConf.register_new_resolver("vision_eval.resource", lambda rel: str(resource(rel)))


def _sources() -> ConfigSources:
    """Which file each top-level section came from, from Hydra's runtime info."""
    from hydra.core.hydra_config import HydraConfig

    from vision_eval.config import ConfigSources

    hydra_cfg = HydraConfig.get()
    roots = []
    for source in hydra_cfg.runtime.config_sources:
        path = str(source.path)
        if source.schema == "file":
            roots.append(Path(path))
        elif source.schema == "pkg":
            continue
    files: dict[str, str] = {}
    for group, choice in hydra_cfg.runtime.choices.items():
        if group.startswith("hydra") or choice is None:
            continue
        for root in roots:
            candidate = root / group / f"{choice}.yaml"
            if candidate.is_file():
                files[group] = str(candidate)
                break
    for root in roots:
        if (root / f"{hydra_cfg.job.config_name}.yaml").is_file():
            files.setdefault("run", str(root / f"{hydra_cfg.job.config_name}.yaml"))
            break
    return ConfigSources(files=files, overrides=list(hydra_cfg.overrides.task))


def _redact_multirun_file() -> None:
    """Hydra saves the whole sweep config (overrides included) as multirun.yaml: hide secrets in it."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    hydra_cfg = HydraConfig.get()
    path = Path(hydra_cfg.sweep.dir) / "multirun.yaml"
    if hydra_cfg.mode != RunMode.MULTIRUN or not path.is_file():
        return
    saved = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    text = redact_override(OmegaConf.to_yaml(OmegaConf.create(redact(saved))))
    staging = path.with_name(f".multirun.{os.getpid()}.yaml")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _fail(message: str, kind: str = "config error", evaluated: str | None = None) -> None:
    print(f"vision-eval: {kind}: {clean_message(message, sys.argv[1:])}", file=sys.stderr)
    print(f"{evaluated}." if evaluated else "nothing was evaluated.", file=sys.stderr)
    sys.exit(EXIT_CONFIG)


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.get().mode == RunMode.MULTIRUN


def _record_job_failure(code: int, message: str, sources: ConfigSources) -> None:
    """A sweep job that evaluated nothing still leaves a run.json saying why (the sweep's exit code reads it)."""
    from hydra.core.hydra_config import HydraConfig

    out = Path(HydraConfig.get().runtime.output_dir)
    info = {
        "exit_code": code,
        "problems": [clean_message(message, sys.argv[1:])],
        "overrides": [redact_override(o) for o in sources.overrides],
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "run.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    except OSError:  # the disk that refused the outputs refuses this too; the sweep counts a missing run.json as 3
        pass


def _task(cfg: DictConfig) -> Any:
    """One Hydra job: every way it can end is one line and an exit code (in a sweep, the job's run.json)."""
    from hydra.core.hydra_config import HydraConfig

    from vision_eval.exits import internal_error, interrupted

    multirun = _is_multirun()
    try:
        return _run_job(cfg, multirun)
    except KeyboardInterrupt as exc:
        interrupted(exc)
    except Exception as exc:  # a bug: one line, the traceback in the run directory's log
        code = internal_error(exc, Path(HydraConfig.get().runtime.output_dir), sys.argv[1:])
        if not multirun:
            sys.exit(code)
        _record_job_failure(code, f"internal error: {type(exc).__name__}", _sources())
        return code


def _run_job(cfg: DictConfig, multirun: bool) -> int:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from vision_eval.api import run_config
    from vision_eval.config import validate_config
    from vision_eval.errors import ConfigError, OutputsNotWritten, PreflightError, VisionEvalError
    from vision_eval.summary import print_summary

    _redact_multirun_file()
    sources = _sources()
    try:
        raw = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))  # a DictConfig gives a dict
        config = validate_config(raw, sources)
        result = run_config(config, sources=sources)
    except OutputsNotWritten as exc:  # the run could not finish: the message says what is kept, how to resume
        print(f"vision-eval: exit {EXIT_INCOMPLETE}: {exc}", file=sys.stderr)
        if multirun:
            _record_job_failure(EXIT_INCOMPLETE, str(exc), sources)
            return EXIT_INCOMPLETE
        sys.exit(EXIT_INCOMPLETE)
    except (OmegaConfBaseException, VisionEvalError) as exc:
        kind = "preflight failed" if isinstance(exc, PreflightError) else "config error"
        message = str(exc).splitlines()[0] if isinstance(exc, OmegaConfBaseException) else str(exc)
        evaluated = exc.evaluated if isinstance(exc, ConfigError) else None
        if not multirun:
            _fail(message, kind, evaluated)
        said = evaluated or "this job evaluated nothing"
        print(f"vision-eval: {kind}: {clean_message(message, sys.argv[1:])} ({said})", file=sys.stderr)
        _record_job_failure(EXIT_CONFIG, f"{kind}: {message}", sources)
        return EXIT_CONFIG
    if config.run.dry_run:
        from vision_eval.dryrun import print_plan

        print_plan(result.run_info["plan"], result.run_info["warnings"])
        return 0
    output_dir = result.output_dir
    if output_dir is not None:
        _write_config(config, result, output_dir)
    print_summary(result.summary, result.metrics, result.run_info)
    if output_dir is not None:
        report = output_dir / "report.html"
        print(f"results: {output_dir}" + (f"  report: {report}" if report.exists() else ""))
    for problem in result.problems:
        print(f"vision-eval: exit {result.exit_code}: {problem}", file=sys.stderr)
    if result.exit_code and not multirun:
        sys.exit(result.exit_code)
    return result.exit_code


def _write_config(config: Any, result: Any, output_dir: Path) -> None:
    """config.yaml beside the outputs (secrets redacted). A disk that refuses it makes the run exit 3; when the
    outputs could not be written already, that is said once and this file is not tried."""
    from omegaconf import OmegaConf

    from vision_eval.errors import NOT_WRITTEN, OutputsNotWritten
    from vision_eval.storage import write_atomically

    if any(problem.startswith(NOT_WRITTEN) for problem in result.problems):
        return
    text = OmegaConf.to_yaml(OmegaConf.create(redact(config.model_dump(mode="json"))))
    try:
        write_atomically(output_dir / "config.yaml", lambda path: path.write_text(text, encoding="utf-8"))
    except OutputsNotWritten as exc:
        result.run_info["problems"].append(f"{exc}; every other output was written")
        result.run_info["exit_code"] = worst([result.exit_code, EXIT_INCOMPLETE])


def _search_dirs(argv: list[str]) -> list[Path]:
    dirs = [conf_dir()]
    for index, arg in enumerate(argv):
        if arg in ("--config-dir", "-cd") and index + 1 < len(argv):
            dirs.append(Path(argv[index + 1]))
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]))
    return dirs


def check_group_choices(argv: list[str]) -> str | None:
    """The problem with a ``group=choice`` argument naming an unknown group or option (``None`` when fine);
    Hydra would fail on it with exit 1 and no list of what exists."""
    import difflib

    dirs = _search_dirs(argv)
    groups = sorted({p.name for d in dirs if d.is_dir() for p in d.iterdir() if p.is_dir() and p.name != "hydra"})
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or arg.startswith(("-", "+", "~")) or "." in key or "/" in key:
            continue
        if key not in groups:
            if key in TOP_LEVEL:
                continue
            close = difflib.get_close_matches(key, groups, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"unknown config group {key!r} in '{arg}'{hint} (groups: {', '.join(groups)})"
        options = sorted({p.stem for d in dirs for p in (d / key).glob("*.yaml")})
        for choice in (v.strip() for v in value.split(",")):
            if choice and choice != "null" and choice not in options:
                close = difflib.get_close_matches(choice, options, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                return f"{key}: no option {choice!r}{hint} (options: {', '.join(options)})"
    return None


def install_log_redaction(argv: list[str]) -> None:
    """Mask secrets given on the command line in every log line (Hydra logs a sweep's overrides)."""
    secrets = given_secrets(argv)
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        text = record.getMessage()
        clean = secrets.scrub(redact_override(text))
        if clean != text:
            record.msg, record.args = clean, None
        return record

    logging.setLogRecordFactory(factory)


def forgiving_overrides(argv: list[str]) -> list[str]:
    """``section.key=value`` overrides become ``++section.key=value`` (set, adding the key if the file does
    not list it), so any setting can be overridden without a ``+``; a misspelt key is then reported by
    validation, naming the key and the override. Group choices, ``hydra.*`` and flags are left alone."""
    out = []
    for arg in argv:
        key, sep, _ = arg.partition("=")
        plain = sep and not arg.startswith(("-", "+", "~")) and "/" not in key and "." in key
        out.append(f"++{arg}" if plain and not key.startswith("hydra.") else arg)
    return out


def expand_shards(argv: list[str]) -> list[str]:
    """``run.shards=N`` (a command-line shortcut) becomes the sweep ``run.shard=0/N,...,N-1/N`` in multirun mode:
    N jobs, each evaluating its own deterministic shard; ``vision-eval-report <sweep dir>`` merges them."""
    out: list[str] = []
    shards = None
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        if sep and key == "run.shards":
            if not value.isdigit() or int(value) < 1:
                _fail(
                    f"run.shards: must be a whole number of shards >= 1, got {value!r} (command-line override '{arg}')"
                )
            shards = int(value)
            out.append("run.shard=" + ",".join(f"{i}/{shards}" for i in range(shards)))
        else:
            out.append(arg)
    if shards is not None and not {"-m", "--multirun"} & set(out):
        out.insert(0, "--multirun")
    return out


def _quiet_second_ctrl_c(unraisable: Any) -> None:
    """A second Ctrl-C that lands in a finalizer while the first one unwinds (a weakref callback during asyncio's
    shutdown) is already being handled: say nothing of it. Anything else goes to Python's own hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def main() -> None:
    """Console-script entry point: a subcommand (``list``, ``describe``, ``init``), else a Hydra run. However it
    ends, the console gets one line (:mod:`vision_eval.exits`): Hydra's refusals are exit 2, a disk that refuses
    a write exit 3, Ctrl-C 130, anything unexpected an internal error (exit 4, its traceback in a log file)."""
    from vision_eval.console import guarded_console
    from vision_eval.exits import hydra_problem, internal_error, interrupted

    given = list(sys.argv[1:])
    sys.unraisablehook = _quiet_second_ctrl_c
    with guarded_console(given):  # secrets masked; `vision-eval list | head`: printing stops, the command does not
        try:
            _main()
        except KeyboardInterrupt as exc:
            interrupted(exc)
        except Exception as exc:
            from vision_eval.storage import disk_failure

            problem = hydra_problem(exc, given)
            if problem is not None:
                _fail(problem)
            disk = disk_failure(exc)
            if disk is not None:
                print(f"vision-eval: exit {EXIT_INCOMPLETE}: {disk}", file=sys.stderr)
                sys.exit(EXIT_INCOMPLETE)
            sys.exit(internal_error(exc, None, given))


def _main() -> None:
    from vision_eval.commands import dispatch

    code = dispatch(sys.argv[1:])  # `list`, `describe`, the top of `--help`: printed before Hydra is imported
    if code is not None:
        sys.exit(code)
    import hydra

    from vision_eval.command_line import CommandLineError, hydra_order
    from vision_eval.launchers import missing_launcher

    try:
        sys.argv[1:] = hydra_order(sys.argv[1:])  # flags anywhere: `run.limit=2 -m judge=a,b`
    except CommandLineError as exc:
        _fail(str(exc), "command-line error")
    sys.argv[1:] = expand_shards(sys.argv[1:])
    problem = check_group_choices(sys.argv[1:]) or missing_launcher(sys.argv[1:])
    if problem:
        _fail(problem)
    install_log_redaction(sys.argv[1:])
    sys.argv[1:] = forgiving_overrides(sys.argv[1:])
    _register_resolvers()
    app = hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(_task)
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises what it would print as a traceback (and exit 1 with)
    try:
        app()
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous
    if SWEEP_EXIT_CODES:
        sys.exit(SWEEP_EXIT_CODES[-1])


if __name__ == "__main__":
    main()
