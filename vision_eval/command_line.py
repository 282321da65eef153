"""A ``vision-eval`` command line as people type it: Hydra's flags (``-m``, ``--config-dir <dir>``, ``--cfg job``...)
anywhere among the overrides.

Hydra's own parser takes the overrides as one run of positional arguments, so ``run.limit=2 -m judge=a,b`` used to
fail with ``unrecognized arguments`` quoting ``++`` arguments the user never typed (and a secret with them).
:func:`hydra_order` reads the command line with that same parser, overrides and flags intermixed, and gives it back
flags first; a command line the parser refuses is a :class:`CommandLineError` quoting only what the user typed.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class CommandLineError(ValueError):
    """A command line Hydra's parser refuses (its message quotes the arguments as typed)."""


def _hydra_parser() -> argparse.ArgumentParser:
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def refuse(message: str) -> NoReturn:
        raise CommandLineError(message)

    parser.error = refuse  # type: ignore[method-assign]  # raise instead of printing usage and exiting
    return parser


def _with_optional_values(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """A flag whose value is optional (``--info [what]``) followed by an override gets its default value, so the
    override is not taken for the flag's value."""
    out: list[str] = []
    optional = {s: a for a in parser._actions if a.nargs == "?" for s in a.option_strings}
    for index, arg in enumerate(argv):
        out.append(arg)
        action = optional.get(arg)
        following = argv[index + 1] if index + 1 < len(argv) else None
        if (
            action is not None
            and following is not None
            and "=" in following
            and following not in (action.choices or ())
        ):
            out.append(str(action.const))
    return out


def hydra_order(argv: list[str]) -> list[str]:
    """``argv`` with Hydra's flags (each with its value) first and the overrides after, each in the order typed;
    raises :class:`CommandLineError` for a command line Hydra's parser would refuse."""
    parser = _hydra_parser()
    args, extras = parser.parse_known_intermixed_args(_with_optional_values(argv, parser))
    unknown = [e.partition("=")[0] for e in extras if e.startswith("-")]
    if unknown or extras:  # the arguments after an unknown flag are taken for its values: name the flags only
        named = ", ".join(unknown) if unknown else " ".join(extras)
        raise CommandLineError(
            f"unknown flag{'s' if len(unknown) > 1 else ''} {named} — `vision-eval --help` lists the flags; "
            "a setting is a key=value override (e.g. run.limit=10)"
        )
    flags: list[str] = []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if not action.option_strings or value is None or value is False or value == action.default:
            continue
        flags += [action.option_strings[0]] if action.nargs == 0 else [action.option_strings[0], str(value)]
    overrides: list[str] = list(args.overrides)
    if any(o.startswith("-") for o in overrides):
        overrides.insert(0, "--")
    return flags + overrides
