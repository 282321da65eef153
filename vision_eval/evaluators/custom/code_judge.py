"""``type: code_judge``: a user's command scores rows, with the row as JSON on stdin.

Per row (default) the command gets one JSON object on stdin and prints one result; in batch mode
(``batch_size``) one process gets JSON Lines (one row per line) and prints one result per line, in
order or carrying the row's ``id``. A result is the standard one (``status, score, passed,
details``) or ``{score, hits, misses, reasoning}``. A call that outlives ``timeout`` has its whole
process group killed; a crash or non-JSON output is the row's error with the stderr tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
from pydantic import ConfigDict

from vision_eval.evaluator import ColumnMap, EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators.custom.python_fn import coerce_result
from vision_eval.example import Example
from vision_eval.results import ERROR, rows_frame
from vision_eval.wording import counted

ROW_FIELDS = ("id", "input", "output", "expected_output", "images")
STDERR_TAIL = 2000


class CodeJudgeSettings(EvaluatorSettings):
    """Settings of ``code_judge``; unknown keys are passed to the command as the row's ``config``."""

    model_config = ConfigDict(extra="allow")

    command: str | list[str]
    """Command to run: an argv list, or a string split like a shell would (no shell is involved)."""
    cwd: str | None = None
    """Working directory of the command (default: the current directory)."""
    timeout: float = 30.0
    """Seconds one call (one row, or one batch in batch mode) may take before its process group is killed."""
    concurrency: int = 4
    """Processes running at once."""
    batch_size: int | None = None
    """Batch mode: rows per process, sent as JSON Lines (``None``: one process per row)."""
    env: dict[str, str] = {}
    """Extra environment variables for the command."""
    columns: list[str] | ColumnMap = ["output"]  # type: ignore[assignment]
    """Dataset columns the command needs (checked before the run); or, as for every evaluator, a mapping of
    canonical columns to the dataset columns read as them (``{output: answer}``)."""


def _suffix(data: bytes) -> str:
    signatures = {b"\x89PNG": ".png", b"\xff\xd8": ".jpg", b"GIF8": ".gif", b"RIFF": ".webp", b"BM": ".bmp"}
    return next((ext for magic, ext in signatures.items() if data.startswith(magic)), ".img")


def image_paths(refs: list[dict[str, Any]] | None, tmpdir: Path) -> list[str]:
    """File paths (or URLs) of a row's image refs; in-memory images are written to ``tmpdir`` first."""
    paths = []
    for ref in refs or []:
        if ref.get("path"):
            paths.append(ref["path"])
        elif ref.get("bytes") is not None:
            data = bytes(ref["bytes"])
            target = tmpdir / f"{ref.get('sha256') or len(paths)}{_suffix(data)}"
            if not target.exists():
                target.write_bytes(data)
            paths.append(str(target))
    return paths


def row_payloads(batch: pl.DataFrame, config: dict[str, Any], tmpdir: Path) -> list[dict[str, Any]]:
    """The JSON object sent for each row of ``batch``."""
    plain = batch.drop([c for c, t in batch.schema.items() if t == pl.Object or c.startswith("_")])
    payloads = []
    for row in plain.iter_rows(named=True):
        meta = {k: v for k, v in row.items() if k not in ROW_FIELDS}
        payloads.append(
            {
                "id": row["id"],
                "input": row.get("input"),
                "output": row.get("output"),
                "expected_output": row.get("expected_output"),
                "images": image_paths(row.get("images"), tmpdir),
                "metadata": meta,
                "config": config,
            }
        )
    return payloads


def _tail(text: str) -> str:
    text = text.strip()
    return text[-STDERR_TAIL:] if text else "(empty)"


def _parse(stdout: str) -> Any:
    """The JSON result in stdout: the whole text, or else its last non-empty line."""
    text = stdout.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            raise
        return json.loads(lines[-1])


class CommandFailed(Exception):
    """A call that produced no usable output (timeout, crash, non-JSON)."""


async def run_command(
    argv: list[str], stdin: bytes, cwd: str | None, env: dict[str, str], timeout: float
) -> tuple[int, str, str]:
    """Run ``argv`` in its own process group; kill the whole group on timeout or cancellation."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **env},
            start_new_session=True,
        )
    except OSError as exc:
        raise CommandFailed(f"cannot start {argv[0]!r}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise CommandFailed(f"timed out after {timeout:g} s") from None
    return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def result_from(raw: Any, threshold: float | None) -> dict[str, Any]:
    """The result row (without ``sample_id``) from one parsed output."""
    try:
        return coerce_result(raw, threshold)
    except (ValueError, TypeError) as exc:
        return {"status": ERROR, "error": f"unusable result: {exc}", "details": {"raw": str(raw)[:STDERR_TAIL]}}


def _failure(message: str, code: int | None, stdout: str, stderr: str) -> dict[str, Any]:
    reason = message if code is None else f"{message} (exit code {code}); stderr: {_tail(stderr)}"
    return {"status": ERROR, "error": reason, "details": {"stdout": stdout[-STDERR_TAIL:], "stderr": _tail(stderr)}}


_CODE_JUDGE = (
    "import json, sys; r = json.load(sys.stdin); "
    "print(json.dumps({'score': float(r['expected_output'].lower() in r['output'].lower())}))"
)


class CodeJudge(Evaluator[CodeJudgeSettings]):
    """Runs a user's command per row or per batch of rows."""

    type_name: ClassVar[str] = "code_judge"
    example: ClassVar[Example] = Example(
        {"type": "code_judge", "command": ["python3", "-c", _CODE_JUDGE], "columns": ["output", "expected_output"]},
        [
            {"id": "a", "output": "There are 5 bottles.", "expected_output": "5 bottles"},
            {"id": "b", "output": "I see 4 bottles.", "expected_output": "5 bottles"},
        ],
        note="The command reads one row as JSON on stdin and prints {score, ...}; any language works.",
    )
    default_threshold = 0.5
    is_async = True

    def __init__(self, name: str, settings: CodeJudgeSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        s = settings
        self.argv = shlex.split(s.command) if isinstance(s.command, str) else [str(a) for a in s.command]
        if not self.argv:
            raise ValueError("command: empty command")
        if s.timeout <= 0 or s.concurrency < 1 or (s.batch_size is not None and s.batch_size < 1):
            raise ValueError("timeout must be > 0, concurrency and batch_size >= 1")
        self.config = dict(s.model_extra or {})
        self._limits: dict[int, asyncio.Semaphore] = {}

    def columns_needed(self) -> tuple[str, ...]:
        columns = self.settings.columns
        return self.required_columns if isinstance(columns, ColumnMap) else tuple(columns)

    def _limit(self) -> asyncio.Semaphore:
        loop = id(asyncio.get_running_loop())
        if loop not in self._limits:
            self._limits = {loop: asyncio.Semaphore(self.settings.concurrency)}
        return self._limits[loop]

    async def _call(self, stdin: bytes) -> tuple[int, str, str]:
        s = self.settings
        async with self._limit():
            return await run_command(self.argv, stdin, s.cwd, s.env, s.timeout)

    async def _one(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            code, out, err = await self._call(json.dumps(payload, default=str).encode())
        except CommandFailed as exc:
            return _failure(str(exc), None, "", "")
        try:
            raw = _parse(out)
        except json.JSONDecodeError:
            return _failure("command printed no JSON result", code, out, err)
        return result_from(raw, self.threshold)

    async def _batch(self, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stdin = "".join(json.dumps(p, default=str) + "\n" for p in payloads).encode()
        try:
            code, out, err = await self._call(stdin)
        except CommandFailed as exc:
            return [_failure(str(exc), None, "", "")] * len(payloads)
        lines = [line for line in out.splitlines() if line.strip()]
        parsed: list[Any] = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                parsed.append(CommandFailed(f"output line is not JSON: {line[:200]!r}"))
        by_id = {str(p["id"]): p for p in parsed if isinstance(p, dict) and "id" in p}
        if len(by_id) < len(payloads) and len(parsed) != len(payloads):
            message = f"batch command returned {counted(len(parsed), 'result')} for {counted(len(payloads), 'row')}"
            return [_failure(message, code, out, err)] * len(payloads)
        results = []
        for i, payload in enumerate(payloads):
            raw = by_id.get(str(payload["id"]), parsed[i] if len(parsed) == len(payloads) else None)
            if isinstance(raw, CommandFailed):
                results.append(_failure(str(raw), code, "", err))
            else:
                results.append(result_from(raw, self.threshold))
        return results

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        with tempfile.TemporaryDirectory(prefix="vision_eval_code_judge_") as tmp:
            payloads = row_payloads(batch, self.config, Path(tmp))
            if s.batch_size:
                chunks = [payloads[i : i + s.batch_size] for i in range(0, len(payloads), s.batch_size)]
                nested = await asyncio.gather(*(self._batch(chunk) for chunk in chunks))
                results = [r for chunk in nested for r in chunk]
            else:
                results = list(await asyncio.gather(*(self._one(p) for p in payloads)))
        return EvalOutput(rows_frame({"sample_id": p["id"], **r} for p, r in zip(payloads, results, strict=True)))

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {**super().describe(), "command": self.argv, "batch_size": s.batch_size, "timeout": s.timeout}
