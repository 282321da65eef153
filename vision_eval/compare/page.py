"""comparison.html: the comparison table, then every sample whose verdict flipped (regressions first) with its image,
its input and expected output, and the two responses side by side. One static file: thumbnails embedded as data URIs,
no script, every dataset text escaped."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.compare.table import FLIPS, Comparison
from vision_eval.report.thumbs import PathDisplay, Thumb, build_thumbnails, image_entries

MAX_FLIPPED = 2000
"""Most flipped samples shown (the rest are in comparison_flips.parquet)."""
_TEXT_CHARS = 4000
_THUMB_BYTES = 4_000_000
_ORDER = ("to_fail", "to_error", "to_skip", "to_pass", "from_error", "from_skip")
_LABELS = {
    "to_pass": "failed \u2192 passed",
    "to_fail": "passed \u2192 failed",
    "to_error": "\u2192 error",
    "from_error": "error \u2192",
    "to_skip": "\u2192 skipped",
    "from_skip": "skipped \u2192",
}
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 1200px; padding: 0 1rem; color: #1d1d1f; }
table.comparison { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.comparison th, table.comparison td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; text-align: right; }
table.comparison th:first-child, table.comparison td:first-child { text-align: left; }
tr.worse td { background: #fde8e8; } tr.better td { background: #e6f6ea; } tr.not-compared td { color: #777; }
.pairing, .note { background: #f4f4f6; padding: 0.5rem 0.75rem; border-radius: 6px; }
article.flip { border: 1px solid #ddd; border-left: 5px solid #999; border-radius: 6px; padding: 0.6rem 0.8rem;
  margin: 0.8rem 0; }
article.flip.worse { border-left-color: #c62828; } article.flip.better { border-left-color: #2e7d32; }
article.flip h3 { margin: 0 0 0.3rem; font-size: 1rem; }
ul.changes { margin: 0 0 0.5rem; padding-left: 1.2rem; }
li.worse { color: #b71c1c; } li.better { color: #1b5e20; }
.row { display: flex; gap: 1rem; align-items: flex-start; }
.images img { max-width: 256px; height: auto; border-radius: 4px; }
.images .missing { color: #777; font-size: 0.85rem; }
.texts { flex: 1; min-width: 0; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 0.8rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.2rem 0 0.6rem; background: #fafafa; padding: 0.4rem;
  border-radius: 4px; }
h4 { margin: 0.3rem 0 0; font-size: 0.85rem; text-transform: uppercase; letter-spacing: 0.03em; color: #555; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _TEXT_CHARS else text[:_TEXT_CHARS] + f"\u2026 ({len(text):,} characters)"


def _number(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: Any) -> str:
    if value is None:
        return "-"
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


def _table(table: pl.DataFrame) -> str:
    head = (
        "<tr><th>evaluator</th><th>n paired</th><th>baseline</th><th>candidate</th><th>\u0394 (95% CI)</th>"
        "<th>p</th><th>test</th><th>failed\u2192passed</th><th>passed\u2192failed</th><th>\u2192 error</th>"
        "<th>error \u2192</th><th>verdict</th></tr>"
    )
    rows = []
    for row in table.iter_rows(named=True):
        interval = "" if row["ci_low"] is None else f" ({row['ci_low']:+.3f} to {row['ci_high']:+.3f})"
        delta = "-" if row["delta"] is None else f"{row['delta']:+.3f}{interval}"
        verdict = row["verdict"] + (f" ({row['note']})" if row["note"] else "")
        cells = [
            row["evaluator"],
            row["n_paired"],
            _number(row["baseline_mean"]),
            _number(row["candidate_mean"]),
            delta,
            _p(row["p_value"]),
            row["test"] or "-",
            *(row[name] or 0 for name in ("to_pass", "to_fail", "to_error", "from_error")),
            verdict,
        ]
        css = str(row["verdict"]).replace(" ", "-").replace("no-significant-difference", "same")
        rows.append(f'<tr class="{css}">' + "".join(f"<td>{_esc(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="comparison"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _flipped_samples(comparison: Comparison, limit: int) -> tuple[pl.DataFrame, int]:
    """The flipped samples to show, worst change first (then in the baseline's order), each with its changes."""
    flips = comparison.flips
    if flips.is_empty():
        return pl.DataFrame(), 0
    rank = pl.col("change").replace_strict({name: i for i, name in enumerate(_ORDER)}, return_dtype=pl.Int32)
    per_sample = (
        flips.with_columns(rank.alias("_rank"), pl.int_range(pl.len()).alias("_row"))
        .group_by("sample_id", maintain_order=True)
        .agg(
            pl.col("_rank").min(),
            pl.col("_row").min(),
            pl.struct(pl.exclude("sample_id", "_rank", "_row")).alias("changes"),
        )
        .sort("_rank", "_row")
    )
    return per_sample.head(limit), per_sample.height


def _sample_rows(comparison: Comparison, ids: pl.Series) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    wanted = ids.implode()
    base = comparison.baseline.samples.filter(pl.col("id").cast(pl.Utf8).is_in(wanted)).collect()
    cand = comparison.candidate.samples.filter(pl.col("id").cast(pl.Utf8).is_in(wanted)).collect()
    outputs = dict(
        zip(
            cand["id"].cast(pl.Utf8).to_list(),
            cand["output"].to_list() if "output" in cand.columns else [],
            strict=False,
        )
    )
    rows = {
        str(row["id"]): {**row, "candidate_output": outputs.get(str(row["id"]))} for row in base.iter_rows(named=True)
    }
    roots = [str((info.get("dataset") or {}).get("root") or "") for info in comparison.baseline.infos]
    images = base["images"] if "images" in base.columns else None
    display = PathDisplay(roots, images)
    thumbs: dict[str, Thumb] = (
        build_thumbnails(images, 256, display=display, budget=_THUMB_BYTES) if images is not None else {}
    )
    return rows, {"thumbs": thumbs, "display": display}


def _images(cell: Any, thumbs: dict[str, Thumb], display: PathDisplay) -> str:
    parts = []
    for entry in image_entries(cell, thumbs, display):
        key = entry.get("key")
        thumb = thumbs.get(key) if key else None
        if thumb is not None and thumb.uri:
            parts.append(f'<img src="{_esc(thumb.uri)}" alt="{_esc(entry["name"])}" title="{_esc(entry["name"])}">')
        else:
            parts.append(
                f'<div class="missing">{_esc(entry.get("name") or "")}: {_esc(entry.get("error") or "")}</div>'
            )
    return "".join(parts)


def _change_line(change: dict[str, Any]) -> str:
    kind = change["change"]
    worse = kind in ("to_fail", "to_error", "to_skip")
    scores = ""
    if change["baseline_score"] is not None or change["candidate_score"] is not None:
        scores = f" ({_number(change['baseline_score'], 2)} \u2192 {_number(change['candidate_score'], 2)})"
    text = f"{change['evaluator']}: {change['baseline_verdict']} \u2192 {change['candidate_verdict']}{scores}"
    return f'<li class="{"worse" if worse else "better"}">{_esc(text)}</li>'


def _card(sample: dict[str, Any], row: dict[str, Any] | None, extra: dict[str, Any]) -> str:
    changes = sample["changes"]
    worse = any(c["change"] in ("to_fail", "to_error", "to_skip") for c in changes)
    row = row or {}
    texts = (
        f"<h4>input</h4><pre>{_esc(_text(row.get('input')))}</pre>"
        f"<h4>expected output</h4><pre>{_esc(_text(row.get('expected_output')))}</pre>"
        '<div class="sides">'
        f"<div><h4>baseline response</h4><pre>{_esc(_text(row.get('output')))}</pre></div>"
        f"<div><h4>candidate response</h4><pre>{_esc(_text(row.get('candidate_output')))}</pre></div></div>"
    )
    return (
        f'<article class="flip {"worse" if worse else "better"}" data-sample-id="{_esc(sample["sample_id"])}">'
        f"<h3>{_esc(sample['sample_id'])}</h3>"
        f'<ul class="changes">{"".join(_change_line(c) for c in changes)}</ul>'
        f'<div class="row"><div class="images">{_images(row.get("images"), extra["thumbs"], extra["display"])}</div>'
        f'<div class="texts">{texts}</div></div></article>'
    )


def render(comparison: Comparison, table: pl.DataFrame, max_flipped: int = MAX_FLIPPED) -> str:
    """The page for ``comparison`` (``table``: its judged table, see :func:`~vision_eval.compare.table.judged`)."""
    shown, total = _flipped_samples(comparison, max_flipped)
    rows, extra = _sample_rows(comparison, shown["sample_id"]) if total else ({}, {})
    cards = (
        "".join(_card(s, rows.get(str(s["sample_id"])), extra) for s in shown.iter_rows(named=True)) if total else ""
    )
    counts = {name: int(table[name].fill_null(0).sum()) for name in FLIPS}
    summary = ", ".join(f"{counts[name]} {_LABELS[name]}" for name in _ORDER if counts[name])
    if not total:
        flipped = "<p>No paired sample changed verdict.</p>" if comparison.pairing.paired else ""
    else:
        more = (
            f" Showing the first {shown.height}; every flip is in comparison_flips.parquet."
            if total > shown.height
            else ""
        )
        samples = f"{total} sample{'s' if total != 1 else ''}"
        verdicts = sum(counts.values())
        changes = f"{verdicts} verdict{'s' if verdicts != 1 else ''} over the evaluators: {summary}"
        flipped = f"<p>{samples} changed verdict ({_esc(changes)}).{_esc(more)}</p>{cards}"
    title = f"{comparison.baseline.path} vs {comparison.candidate.path}"
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>vision-eval compare: {_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Comparison</h1><p>baseline <code>{_esc(comparison.baseline.path)}</code>, candidate "
        f"<code>{_esc(comparison.candidate.path)}</code> \u2014 {generated}</p>"
        f'<p class="pairing">{_esc(comparison.pairing.sentence())}.</p>'
        f"{_table(table)}"
        '<p class="note">\u0394 = candidate \u2212 baseline mean score over the samples scored on both sides; 95% '
        "interval by paired bootstrap; p by the exact McNemar test (pass/fail scores) or the Wilcoxon signed-rank "
        "test (other scores).</p>"
        f"<h2>Flipped samples</h2>{flipped}</body></html>"
    )


def write_page(comparison: Comparison, table: pl.DataFrame, path: Path, max_flipped: int = MAX_FLIPPED) -> Path:
    """Write comparison.html to ``path`` (through a temporary file)."""
    text = render(comparison, table, max_flipped)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
