"""Plain reasons: what a row error says when an exception was caught on the row's content.

A reason holds no run-specific noise (memory addresses such as ``<_io.BytesIO object at 0x7f...>``) and quotes
no bytes (``b'root:x:0'``): identical runs give identical reasons, and a file's contents never reach the outputs.
The exception's type, when worth keeping, goes in ``details``, not in the reason.
"""

from __future__ import annotations

import re

_NOISE = re.compile(r"""\s*<[^<>]* at 0x[0-9a-fA-F]+>|\s*\bb(['"]).*?(?<!\\)\1""")


def plain_reason(exc: BaseException) -> str:
    """An exception's message without memory addresses or quoted bytes, whitespace collapsed."""
    return " ".join(_NOISE.sub("", str(exc)).split())
