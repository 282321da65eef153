"""``vision-eval``: the Hydra entry point.

vision-eval                                   # the demo, offline
vision-eval dataset=X evaluators=Y judge=Z    # compose
vision-eval -m judge=a,b                      # sweep
vision-eval --cfg job                         # show the composed config
vision-eval list | describe <type> | init <dir> [--data <file>] | compare <baseline> <candidate>   # subcommands

Exit codes (:mod:`vision_eval.gates`): 0 every gate holds, 1 a quality gate failed, 2 config or preflight
error (nothing evaluated), 3 too many errors / budget spent / circuit breaker, 130 interrupted. A sweep runs
every job whatever the others do and exits with the most severe code of its jobs.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from vision_eval._resources import conf_dir, resource
from vision_eval.config import SECRET_ASSIGNMENT, ConfigSources, redact, redact_override
from vision_eval.errors import PreflightError, VisionEvalError
from vision_eval.gates import EXIT_CONFIG, EXIT_INTERRUPTED, SWEEP_EXIT_CODES, worst

TOP_LEVEL = ("dataset", "evaluators", "judge", "candidate", "run", "hydra")


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("vision_eval.resource"):
        OmegaConf.register_new_resolver("vision_eval.resource", lambda rel: str(resource(rel)))


def _sources() -> ConfigSources:
    """Which file each top-level section came from, from Hydra's runtime info."""
    from hydra.core.hydra_config import HydraConfig

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

    hydra_cfg = HydraConfig.get()
    path = Path(hydra_cfg.sweep.dir) / "multirun.yaml"
    if hydra_cfg.mode != RunMode.MULTIRUN or not path.is_file():
        return
    saved = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    text = redact_override(OmegaConf.to_yaml(OmegaConf.create(redact(saved))))
    staging = path.with_name(f".multirun.{os.getpid()}.yaml")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def _fail(message: str, kind: str = "config error") -> None:
    print(f"vision-eval: {kind}: {message}", file=sys.stderr)
    print("nothing was evaluated.", file=sys.stderr)
    sys.exit(EXIT_CONFIG)


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.get().mode == RunMode.MULTIRUN


def _record_job_failure(code: int, message: str, sources: ConfigSources) -> None:
    """A sweep job that evaluated nothing still leaves a run.json saying why (the sweep's exit code reads it)."""
    from hydra.core.hydra_config import HydraConfig

    out = Path(HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = {"exit_code": code, "problems": [message], "overrides": [redact_override(o) for o in sources.overrides]}
    (out / "run.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def _task(cfg: DictConfig) -> Any:
    from vision_eval.api import run_config
    from vision_eval.config import validate_config
    from vision_eval.summary import print_summary

    _redact_multirun_file()
    sources = _sources()
    multirun = _is_multirun()
    try:
        raw = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))  # a DictConfig gives a dict
        config = validate_config(raw, sources)
        result = run_config(config, sources=sources)
    except (OmegaConfBaseException, VisionEvalError) as exc:
        kind = "preflight failed" if isinstance(exc, PreflightError) else "config error"
        message = str(exc).splitlines()[0] if isinstance(exc, OmegaConfBaseException) else str(exc)
        if not multirun:
            _fail(message, kind)
        print(f"vision-eval: {kind}: {message} (this job evaluated nothing)", file=sys.stderr)
        _record_job_failure(EXIT_CONFIG, f"{kind}: {message}", sources)
        return EXIT_CONFIG
    except KeyboardInterrupt:  # run_config has said how to resume; finished work is on disk
        sys.exit(EXIT_INTERRUPTED)
    if config.run.dry_run:
        from vision_eval.dryrun import print_plan

        print_plan(result.run_info["plan"], result.run_info["warnings"])
        return 0
    output_dir = result.output_dir
    if output_dir is not None:
        (output_dir / "config.yaml").write_text(
            OmegaConf.to_yaml(OmegaConf.create(redact(config.model_dump(mode="json")))), encoding="utf-8"
        )
    print_summary(result.summary, result.metrics, result.run_info)
    if output_dir is not None:
        report = output_dir / "report.html"
        print(f"results: {output_dir}" + (f"  report: {report}" if report.exists() else ""))
    for problem in result.problems:
        print(f"vision-eval: exit {result.exit_code}: {problem}", file=sys.stderr)
    if result.exit_code and not multirun:
        sys.exit(result.exit_code)
    return result.exit_code


class SweepExitCode(Callback):
    """Hydra callback: when a multirun ends, the most severe exit code of its jobs (read from their run.json)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        codes = []
        for info in Path(str(config.hydra.sweep.dir)).glob("*/run.json"):
            try:
                codes.append(int(json.loads(info.read_text(encoding="utf-8")).get("exit_code", 0)))
            except (OSError, ValueError):
                codes.append(3)
        SWEEP_EXIT_CODES.append(worst(codes))


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
    from vision_eval.secrets import Secrets

    values = [v for arg in argv for _, found in SECRET_ASSIGNMENT.findall(arg) for v in found.split(",")]
    secrets = Secrets(values)
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


def main() -> None:
    """Console-script entry point: a subcommand (``list``, ``describe``, ``init``), else a Hydra run."""
    import hydra

    from vision_eval.commands import dispatch
    from vision_eval.launchers import missing_launcher

    code = dispatch(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    sys.argv[1:] = expand_shards(sys.argv[1:])
    problem = check_group_choices(sys.argv[1:]) or missing_launcher(sys.argv[1:])
    if problem:
        _fail(problem)
    install_log_redaction(sys.argv[1:])
    sys.argv[1:] = forgiving_overrides(sys.argv[1:])
    _register_resolvers()
    hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(_task)()
    if SWEEP_EXIT_CODES:
        sys.exit(SWEEP_EXIT_CODES[-1])


if __name__ == "__main__":
    main()
