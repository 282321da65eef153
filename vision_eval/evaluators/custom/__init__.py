"""A user's own rule: ``python`` (a function, in-process) and ``code_judge`` (a command, row as JSON on stdin)."""
