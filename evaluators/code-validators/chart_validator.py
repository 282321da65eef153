# /// script
# requires-python = ">=3.11"
# dependencies = [
#   "polars>=1.30,<3",
#   "pyarrow>=15",
#   "pydantic>=2.9,<3",
#   "numpy>=1.26",
#   "rapidfuzz>=3.0",
#   "python-dateutil>=2.8",
#   "jsonschema>=4.20",
# ]
# ///
"""chart_validator: the built-in `chart_validator` as a standalone script.

Usage: `python chart_validator.py '{"output": ..., "expected_output": ..., <settings>}'` or the JSON on stdin;
`uv run chart_validator.py ...` installs the dependencies above first. vision-eval itself is not on PyPI: the
script uses the package of the checkout it sits in (else an installed vision-eval).
Prints the standard result (status, score, passed, details); exit code 0 passed, 1 not passed, 2 error.
"""

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
if (CHECKOUT / "vision_eval" / "__init__.py").is_file():
    sys.path.insert(0, str(CHECKOUT))

try:
    from vision_eval.evaluators.code.chart import ChartValidator
    from vision_eval.evaluators.code.script import main
except ImportError as exc:
    print(
        f"chart_validator needs the vision-eval package ({exc}): run it from a checkout of vision-eval, with its "
        "dependencies installed (or 'uv run'), or install vision-eval",
        file=sys.stderr,
    )
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main(ChartValidator))
