"""The ``vision-eval`` subcommands run before Hydra: ``list``, ``describe``, ``init``, ``compare`` and the top of
``--help``.

:func:`dispatch` looks at the first argument only; anything else (``vision-eval``, ``key=value`` overrides,
``-m``, ``--cfg job``, ``--config-dir``) is left to Hydra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vision_eval.exit_codes import EXIT_CONFIG
from vision_eval.wording import counted

SUBCOMMANDS = ("list", "describe", "init", "compare")

HELP = """\
vision-eval: declarative batch evaluation for vision AI. A dataset (images, inputs, model outputs, expected
outputs) and a stack of evaluators (validators, benchmark metrics, vision LLM judges) in; Parquet results, a
summary and report.html out.

Commands:
  vision-eval list                          evaluator types, judges, dataset presets and stacks
  vision-eval describe <type>               an evaluator's settings, the columns it reads, a working example
  vision-eval init <dir> [--data <file>]    a config folder for your own data; then: vision-eval --config-dir <dir>
  vision-eval compare <baseline> <candidate>  two runs sample by sample: differences, p-values, flipped samples
                                            (--fail-on-regression: exit 1 when the candidate is significantly worse)
  vision-eval [overrides]                   run an evaluation (below)

Common overrides:
  dataset=<name> evaluators=<name> judge=<name>   pick config group options (`vision-eval list` shows them)
  dataset.path=<file, folder or hub id>           your data in place of a preset's
  evaluators.<name>.<setting>=<value>             one evaluator's setting, e.g. evaluators.exact.threshold=0.9
  judge=openai judge.model=<litellm id>           grade model-graded evaluators (none: they are skipped)
  candidate=openai                                a model under test writes `output` first
  run.limit=10 run.dry_run=true run.max_cost_usd=5 run.resume=<run dir>
  -m key=a,b                                      a sweep: one run per combination
  --config-dir <dir>                              your config folders next to the shipped ones
  --cfg job                                       print the composed config
Exit codes: 0 every gate holds, 1 a quality gate failed, 2 config error (nothing evaluated), 3 a run problem
(errors past a gate, budget, circuit breaker, nothing scored, outputs not written), 4 an internal error (a bug),
130 interrupted. Docs: README.md and docs/ in the repository.

Hydra's own help follows.
"""


def _config_dirs(values: list[str]) -> list[Path]:
    from vision_eval._resources import conf_dir

    return [conf_dir(), *(Path(v).expanduser() for v in values)]


def _list(argv: list[str]) -> int:
    from vision_eval.commands.catalog import listing

    parser = argparse.ArgumentParser(prog="vision-eval list", description="Evaluator types, judges, presets.")
    parser.add_argument("--config-dir", "-cd", action="append", default=[], help="also list this config folder")
    args = parser.parse_args(argv)
    print(listing(_config_dirs(args.config_dir)))
    return 0


def _describe(argv: list[str]) -> int:
    from vision_eval.commands.describe import describe

    parser = argparse.ArgumentParser(
        prog="vision-eval describe", description="An evaluator type's settings, the columns it reads, an example."
    )
    parser.add_argument("type", help="a registered type (vision-eval list) or module:Class of your own")
    args = parser.parse_args(argv)
    try:
        print(describe(args.type))
    except (ValueError, ImportError, AttributeError) as exc:
        print(f"vision-eval describe: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return 0


def _init(argv: list[str]) -> int:
    from vision_eval.commands.init import JUDGE_NAME, init_project
    from vision_eval.errors import VisionEvalError

    parser = argparse.ArgumentParser(
        prog="vision-eval init",
        description="Write a config folder (dataset/, evaluators/, judge/, project/) for your data.",
    )
    parser.add_argument("dir", type=Path, help="the config folder to write")
    parser.add_argument("--data", type=Path, help="JSONL, JSON, CSV or Parquet file, or an image folder")
    parser.add_argument("--force", action="store_true", help="overwrite files init wrote before")
    args = parser.parse_args(argv)
    if args.data is not None and not args.data.expanduser().exists():
        print(f"vision-eval init: --data {args.data}: no such file or folder", file=sys.stderr)
        return EXIT_CONFIG
    try:
        result = init_project(args.dir, args.data, force=args.force)
    except FileExistsError as exc:
        print(f"vision-eval init: would overwrite {exc}; pass --force to replace them", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:  # a folder that cannot be written (read-only, /proc, a file in the way)
        where = exc.filename or args.dir
        print(f"vision-eval init: cannot write {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CONFIG
    except VisionEvalError as exc:
        print(f"vision-eval init: cannot read the data: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    mapped = ", ".join(f"{src} -> {dst}" for src, dst in result.mapping.items()) or "none needed"
    print(f"vision-eval init: {counted(result.rows, 'row')} read; columns mapped: {mapped}")
    print(f"wrote {args.dir}/:")
    for path in result.files:
        print(f"  {path.relative_to(args.dir.expanduser())}")
    print("starter stack:")
    for starter in result.stack:
        print(f"  {starter.name} ({starter.settings['type']}): {starter.why}")
    for problem in result.problems:
        print(f"note: {problem}")
    print("next:")
    print(f"  vision-eval --config-dir {args.dir}                  # run it (offline: judge rows are skipped)")
    print(f"  vision-eval --config-dir {args.dir} judge={JUDGE_NAME}    # grade with a model (set OPENAI_API_KEY)")
    print("  vision-eval describe <type>                   # settings of any evaluator")
    return 0


def _compare(argv: list[str]) -> int:
    from vision_eval.commands.compare import main

    return main(argv)


def print_help_header() -> None:
    """What the tool is, its subcommands and the common overrides (printed before Hydra's help)."""
    print(HELP, flush=True)


def dispatch(argv: list[str]) -> int | None:
    """Run a subcommand and return its exit code, or ``None`` when ``argv`` is for Hydra."""
    if not argv:
        return None
    first = argv[0]
    commands = {"list": _list, "describe": _describe, "init": _init, "compare": _compare}
    if first in commands:
        try:
            return commands[first](argv[1:])
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            return int(exc.code or 0)
    if "--help" in argv or first == "-h":
        print_help_header()
    return None
