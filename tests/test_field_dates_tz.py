"""Date matching gives the same answers whatever the machine's time zone (run under two TZ values)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import child_env

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, time
import vision_eval
time.tzset()
cases = [
    ("2025-01-15T23:30:00-08:00", "2025-01-15", {}),
    ("2025-01-15T00:30:00+14:00", "2025-01-15", {}),
    ("2025-01-15T00:30:00Z", "2025-01-14", {}),
    ("15-JAN-2025", "2025-01-15", {"formats": ["DD-MMM-YYYY"]}),
    ("02/01/2025", "2025-01-02", {"formats": ["DD/MM/YYYY"]}),
    ("2025-01-15 23:59:59", "2025-01-15T23:59:59", {"compare_time": True}),
    ("Jan 15 2025 11pm", "2025-01-15", {}),
]
rows, fields = [], []
for i, (got, want, extra) in enumerate(cases):
    rows.append({"id": str(i), "output": json.dumps({f"d{i}": got}), "expected_output": json.dumps({f"d{i}": want})})
    fields.append({"path": f"d{i}", "match": "date", "required": False, **extra})
res = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields}})
out = {r["sample_id"] + ":" + r["path"]: [r["hit"], r["reason"]] for r in res.fields.to_dicts() if r["hit"] is not None
       and r["reason"] != "no expected value"}
print(json.dumps(out, sort_keys=True))
"""


def _run(tz: str) -> dict[str, list]:
    env = child_env(TZ=tz)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_dates_independent_of_time_zone() -> None:
    east, west = _run("Pacific/Kiritimati"), _run("America/Los_Angeles")
    assert east == west
    assert east["0:d0"] == [True, "same date 2025-01-15"]
    assert east["1:d1"] == [True, "same date 2025-01-15"]
    # The date as written counts, never a conversion: 00:30Z on the 15th is the 15th.
    assert east["2:d2"] == [False, "got 2025-01-15, expected 2025-01-14"]
    assert east["3:d3"] == [True, "same date 2025-01-15"]
    assert east["4:d4"] == [True, "same date 2025-01-02"]
    assert east["5:d5"] == [True, "same date 2025-01-15 23:59:59"]
    assert east["6:d6"] == [True, "same date 2025-01-15"]
