"""Assembling the single self-contained HTML file: inline CSS, inline JS, the data as escaped JSON."""

from __future__ import annotations

import html
import json
from pathlib import Path
from string import Template
from typing import Any

ASSETS = Path(__file__).parent / "assets"
SCRIPT_PARTS = ("core.js", "overview.js", "filters.js", "samples.js")

# Inside <script type="application/json"> the HTML parser only looks for "</script" (and "<!--");
# escaping every <, > and & keeps any dataset text inert, U+2028/2029 keep it valid JavaScript too.
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TRANSLATE = str.maketrans(_JSON_ESCAPES)


def script_json(payload: Any) -> str:
    """JSON text safe to place inside a ``<script>`` element."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return text.translate(_TRANSLATE)


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def page_script() -> str:
    """The page's code: the JS parts in one function scope (renders the data with DOM text nodes only)."""
    body = "\n".join(_asset(name) for name in SCRIPT_PARTS)
    if "</script" in body.lower() or "<!--" in body:  # our own code must never end its element early
        raise ValueError("report scripts must not contain '</script' or '<!--'")
    return f'(function () {{\n  "use strict";\n{body}}})();'


def render_html(payload: dict[str, Any]) -> str:
    """The complete report page for ``payload`` (see ``payload.build_payload``)."""
    script = page_script()
    return Template(_asset("report.html")).substitute(
        title=html.escape(str(payload.get("title") or "vision-eval report")),
        css=_asset("report.css"),
        data=script_json(payload),
        script=script,
    )
