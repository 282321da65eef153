"""What reaches the console of the commands: the secrets of the command line and the environment are masked in
everything printed (Hydra's own messages and ``--cfg job`` included), and a reader that goes away
(``vision-eval list | head``, ``2>&1 | head``) stops the printing, not the command: what it writes to files is
finished, its exit code is its own, and no ``BrokenPipeError`` traceback appears."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO, cast

from vision_eval.secrets import Secrets, given_secrets


class _ConsoleStream:
    """A stand-in for ``sys.stdout`` or ``sys.stderr``: it masks ``secrets`` in what is written, and its first write
    into a closed pipe points the descriptor at ``os.devnull``, so what is left to print (and what the stream still
    holds, flushed at exit) goes nowhere."""

    def __init__(self, stream: TextIO, secrets: Secrets) -> None:
        self._stream = stream
        self._secrets = secrets

    def _reader_left(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            self._stream.write(self._secrets.scrub(text) if self._secrets else text)
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
def guarded_console(argv: Sequence[str] = ()) -> Iterator[None]:
    """Run a console command with ``sys.stdout`` and ``sys.stderr`` that mask the secrets ``argv`` and the
    environment hold (:func:`vision_eval.secrets.given_secrets`) and survive a reader that closes the pipe."""
    previous = sys.stdout, sys.stderr
    if isinstance(sys.stdout, _ConsoleStream):
        yield
        return
    secrets = given_secrets(argv)
    sys.stdout, sys.stderr = (cast(TextIO, _ConsoleStream(s, secrets)) if s is not None else s for s in previous)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        sys.stdout, sys.stderr = previous
