"""How the ``vision-eval`` process ends when a run cannot end normally, always in one line on the console:

* Ctrl-C: what is kept and how to resume (exit 130), once, however many interrupts arrive;
* an unexpected exception (a bug): where to report it, the traceback written to a log file (exit 4);
* a command line Hydra cannot read (its override grammar, a missing config): the override and a hint (exit 2).

The exit codes themselves are in :mod:`vision_eval.gates`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import NoReturn

from vision_eval.config import SECRET_ASSIGNMENT, redact_override
from vision_eval.gates import EXIT_INTERNAL, EXIT_INTERRUPTED
from vision_eval.secrets import Secrets

LOG_NAME = "vision-eval-error.log"
"""The file an internal error's traceback goes to, in the run directory (or a temporary file when there is none)."""
GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"


def interrupted(exc: KeyboardInterrupt) -> NoReturn:
    """End the process after Ctrl-C: further interrupts are ignored (a second Ctrl-C, or the same one seen twice,
    never prints a traceback), the run's hint is printed once, exit 130. ``os._exit``: nothing is left to write
    (finished work was saved as it finished), and interpreter shutdown would report every pending task."""
    with contextlib.suppress(ValueError):  # ValueError: not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    hint = getattr(exc, "hint", None) or "interrupted: nothing was evaluated"
    try:
        print(hint, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(EXIT_INTERRUPTED)


def _secrets(argv: list[str]) -> Secrets:
    """Values a traceback must not show: keys given on the command line or in ``*_API_KEY`` variables."""
    given = [v for arg in argv for _, found in SECRET_ASSIGNMENT.findall(arg) for v in found.split(",")]
    env = [value for name, value in os.environ.items() if name.upper().endswith(("API_KEY", "_TOKEN", "_SECRET"))]
    return Secrets([*given, *env])


def _report_to() -> str:
    """Where bugs are reported: the package's declared issue tracker, else its maintainers."""
    from importlib import metadata

    try:
        urls = metadata.metadata("vision-eval").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("issues", "bug tracker", "tracker", "bugs"):
            return str(url).strip()
    return "the vision-eval maintainers"


def _write_log(text: str, run_dir: Path | None) -> Path | None:
    """The traceback in the run directory, else in a temporary file (``None`` when neither can be written)."""
    if run_dir is not None:
        try:
            path = run_dir / LOG_NAME
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            pass
    try:
        handle, name = tempfile.mkstemp(prefix=f"vision-eval-error-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        return Path(name)
    except OSError:
        return None


def internal_error(exc: BaseException, run_dir: Path | None, argv: list[str]) -> int:
    """Say in one line that vision-eval failed (a bug, not the user's input) and where to report it; the traceback
    (secrets masked) goes to a log file, never to the console. Returns exit code 4."""
    secrets = _secrets(argv)
    text = secrets.scrub(redact_override("".join(traceback.format_exception(exc))))
    log = _write_log(text, run_dir)
    what = secrets.scrub(
        redact_override(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    )
    saved = f"the traceback is in {log}" if log is not None else "the traceback could not be saved (no writable folder)"
    print(
        f"vision-eval: internal error ({what}): this is a bug; {saved}; "
        f"please report it to {_report_to()} with that file",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def hydra_problem(exc: Exception, argv: list[str]) -> str | None:
    """The one-line problem of a command line Hydra refused (``None`` when ``exc`` is not Hydra's or OmegaConf's
    complaint about the command line or the config)."""
    from hydra.errors import HydraException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(exc, OverrideParseException):
        given = next((a for a in argv if exc.override in (a, f"++{a}")), exc.override)
        reason = exc.message.splitlines()[0] if exc.message else "not a valid override"
        key, _, value = given.lstrip("+~").partition("=")
        hint = f'quote the value: {key}="{value}" (and the whole argument for the shell)' if value else ""
        return redact_override(
            f"cannot read the override '{given}': {reason}" + (f"; {hint}" if hint else "") + f"; see {GRAMMAR}"
        )
    if isinstance(exc, HydraException | OmegaConfBaseException):
        return redact_override(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    return None
