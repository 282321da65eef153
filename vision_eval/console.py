"""The console of the commands when its reader goes away (``vision-eval list | head``, ``2>&1 | head``): printing
stops, the command does not. What it writes to files is finished, its exit code is its own, and no
``BrokenPipeError`` traceback appears."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, cast


class _ReaderMayLeave:
    """A stand-in for ``sys.stdout`` or ``sys.stderr``: its first write into a closed pipe points the descriptor at
    ``os.devnull``, so what is left to print (and what the stream still holds, flushed at exit) goes nowhere."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _reader_left(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()
            with contextlib.suppress(OSError, ValueError):  # what was buffered now goes to os.devnull
                self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def reader_may_leave() -> Iterator[None]:
    """Run a console command with ``sys.stdout`` and ``sys.stderr`` tolerant of a reader that closes the pipe."""
    previous = sys.stdout, sys.stderr
    if isinstance(sys.stdout, _ReaderMayLeave):
        yield
        return
    sys.stdout, sys.stderr = (cast(TextIO, _ReaderMayLeave(s)) if s is not None else s for s in previous)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        sys.stdout, sys.stderr = previous
