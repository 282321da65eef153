"""The exceptions a run raises on purpose.

Row-level problems never raise: they become result rows with status ``error``. These exceptions are for problems
that make the whole run meaningless (a bad config, an unreadable dataset, a damaged checkpoint), raised before any
paid call, and for the process faults that stop a run (its files could not be written, an interrupt); each has
its exit code (:mod:`vision_eval.gates`).
"""

from __future__ import annotations


class VisionEvalError(Exception):
    """Base class of the errors this package raises on purpose."""


class ConfigError(VisionEvalError):
    """A config value is wrong. Names the dotted key and, when known, the file."""

    def __init__(self, key: str, message: str, file: str | None = None, evaluated: str | None = None) -> None:
        self.key = key
        self.message = message
        self.file = file
        self.evaluated = evaluated
        """What the run had evaluated when the value stopped it (a later batch's row); ``None``: nothing."""
        where = f" (in {file})" if file else ""
        super().__init__(f"{key}: {message}{where}")


class DatasetError(VisionEvalError):
    """The dataset cannot be loaded or lacks a required column."""


class PreflightError(VisionEvalError):
    """A configured model cannot be used (missing key, wrong URL or model, refused request): nothing ran."""


class CheckpointDamaged(ConfigError):
    """A checkpoint to resume has damaged files (exit 2, found before anything is sent): the message names each
    file, what is intact and what a resume with ``run.resume_damaged=true`` would send again."""

    def __init__(self, message: str) -> None:
        super().__init__("run.resume", message)


NOT_WRITTEN = "the outputs could not be written"
"""How every message about a write the disk refused begins."""


class OutputsNotWritten(VisionEvalError):
    """A file of the run could not be written (a full disk, a file-size limit, a read-only folder): exit 3. The
    message says which file, what was written and kept, and how to resume."""

    def __init__(self, path: str, reason: str, message: str | None = None) -> None:
        self.path = path
        """The file (or folder) whose write failed."""
        self.reason = reason
        """The system's reason (``No space left on device``...)."""
        super().__init__(message or f"{NOT_WRITTEN}: {path}: {reason}")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGINT) stopped a run; ``hint`` says what was kept and how to resume."""

    def __init__(self, hint: str) -> None:
        self.hint = hint
        super().__init__(hint)
