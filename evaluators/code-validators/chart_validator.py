# /// script
# requires-python = ">=3.11"
# dependencies = ["vision-eval"]
# ///
"""chart_validator: the built-in `chart_validator` as a standalone script.

Usage: `python chart_validator.py '{"output": ..., "expected_output": ..., <settings>}'` or the JSON on stdin.
Prints the standard result (status, score, passed, details); exit code 0 passed, 1 not passed, 2 error.
"""

import sys

try:
    from vision_eval.validators.script import main
except ImportError as exc:
    print(
        f"chart_validator needs the vision-eval package ({exc}); install it or run with 'uv run' (PEP 723 header)",
        file=sys.stderr,
    )
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main("chart"))
