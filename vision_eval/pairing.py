"""Which samples of two runs (or of a sweep's variants) can be compared: the same ``sample_id`` *and* the same content.

Runs are compared sample by sample on ``sample_id``, whatever file the rows came from (two models' predictions
exported to two files pair). An id only names a sample, though: a pair is compared only when what was asked is the
same on both sides, i.e. its :data:`CONTENT_COLUMNS` (the input, the expected output and the images' hashes, plus the
dataset columns an evaluator reads in their place through ``columns:`` or ``answers_column``) are equal. The output
is not part of it: it is what differs between the models being compared. An id whose content differs is listed and
not compared; an id in one run only is counted.

Content is compared through a 64-bit hash of those columns (:func:`content_hashes`), computed by Polars in one pass
over ``samples.parquet`` (two different contents share a hash with probability about 2^-64).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

CONTENT = "_content"
"""The column holding a sample's content hash (null: the run recorded no content for it)."""
CONTENT_COLUMNS = ("input", "expected_output", "images")
"""What a sample is, beside its id: compared sides must agree on these."""
LISTED = 20
"""Most ids a pairing names of those whose content differs (the count covers them all)."""
_SEED = 1729


def content_columns(infos: Iterable[dict[str, Any]]) -> list[str]:
    """The columns that make a sample's content: :data:`CONTENT_COLUMNS` and those the runs' evaluators read as
    their input, expected output or images (``columns:`` mappings, ``answers_column``), from their run.json."""
    found = list(CONTENT_COLUMNS)
    for info in infos:
        stack = (info.get("config") or {}).get("evaluators") or {}
        for settings in stack.values() if isinstance(stack, dict) else ():
            if not isinstance(settings, dict):
                continue
            mapped = settings.get("columns") or {}
            for canonical, columns in mapped.items() if isinstance(mapped, dict) else ():
                if canonical != "output":
                    found += [columns] if isinstance(columns, str) else [str(c) for c in columns or []]
            if isinstance(settings.get("answers_column"), str):
                found.append(settings["answers_column"])
    return list(dict.fromkeys(found))


def _missing(seed: int) -> pl.Expr:
    """The hash of no value: a null, an empty list and a column the run does not have are all the same."""
    return pl.lit(None, pl.Utf8).hash(seed)


def _value_hash(name: str, dtype: pl.DataType, seed: int) -> pl.Expr:
    """A 64-bit hash of a column's values, equal exactly when the values are (to 2^-64): text as is, images by
    their hashes (the path when a file could not be read), numbers and categories as text, other nested values as
    JSON; no value (null, empty list) as :func:`_missing`."""
    column = pl.col(name)
    if dtype == pl.Null:
        return _missing(seed)
    present = column.is_not_null()
    if isinstance(dtype, pl.List):
        present = present & (column.list.len() > 0)
    value: pl.Expr
    if (
        isinstance(dtype, pl.List)
        and isinstance(dtype.inner, pl.Struct)
        and "sha256" in {f.name for f in dtype.inner.fields}
    ):
        element = pl.element().struct
        path = element.field("path") if "path" in {f.name for f in dtype.inner.fields} else pl.lit(None, pl.Utf8)
        ref = pl.coalesce(element.field("sha256"), pl.lit("path:") + path, pl.lit("unreadable"))
        value = column.list.eval(ref).hash(seed)
    elif dtype.is_numeric() or dtype in (pl.Boolean, pl.Categorical, pl.Utf8) or isinstance(dtype, pl.Enum):
        value = column.cast(pl.Utf8).hash(seed)
    else:
        value = pl.struct(column).struct.json_encode().hash(seed)
    return pl.when(present).then(value).otherwise(_missing(seed))


def content_hashes(
    samples: pl.LazyFrame, columns: Sequence[str] = CONTENT_COLUMNS, id_column: str = "id", keep: Sequence[str] = ()
) -> pl.LazyFrame:
    """``sample_id`` and :data:`CONTENT` for each row of ``samples`` (a run's samples.parquet, lazily), after the
    columns of ``keep`` (labels the caller added, e.g. the run)."""
    schema = samples.collect_schema()
    content: pl.Expr = pl.lit(0, pl.UInt64)
    for index, name in enumerate(columns):  # each column hashed, then mixed in order (cheaper than a struct's hash)
        seed = _SEED + index
        value = _value_hash(name, schema[name], seed) if name in schema else _missing(seed)
        content = value if index == 0 else (content ^ value).hash(_SEED)
    sample_id = pl.col(id_column).cast(pl.Utf8) if id_column in schema else pl.lit(None, pl.Utf8)
    return samples.select(*keep, sample_id.alias("sample_id"), content.alias(CONTENT))


@dataclass
class Pairing:
    """How two sides' samples pair: the counts a comparison states, and the ids whose content differs."""

    paired: int = 0
    """Samples with the same id and content on both sides: the ones compared."""
    differ: int = 0
    """Samples whose id is on both sides but whose content differs (or was not recorded): not compared."""
    only_baseline: int = 0
    """Samples on the baseline side only."""
    only_candidate: int = 0
    """Samples on the candidate side only."""
    differing_ids: list[str] = field(default_factory=list)
    """Up to :data:`LISTED` of the ids whose content differs, in the baseline's order."""

    def sentence(self) -> str:
        """The pairing in words, e.g. ``30 samples paired; 1 shares its id but differs in content (s3): not
        compared; 2 in the baseline only``."""
        parts = [f"{self.paired} sample{'s' if self.paired != 1 else ''} paired"]
        if self.differ:
            named = ", ".join(self.differing_ids) + (", ..." if self.differ > len(self.differing_ids) else "")
            verb = "shares its id but differs" if self.differ == 1 else "share their ids but differ"
            parts.append(f"{self.differ} {verb} in content ({named}): not compared")
        if self.only_baseline:
            parts.append(f"{self.only_baseline} in the baseline only")
        if self.only_candidate:
            parts.append(f"{self.only_candidate} in the candidate only")
        return "; ".join(parts)


POSITION_BASELINE, POSITION_CANDIDATE = "_pos_b", "_pos_c"
"""A paired sample's row in each side's samples."""


def pair(baseline: pl.DataFrame, candidate: pl.DataFrame) -> tuple[pl.DataFrame, Pairing]:
    """The samples that pair (``sample_id`` and their rows in each frame, :data:`POSITION_BASELINE` and
    :data:`POSITION_CANDIDATE`, in the baseline's order) and the counts, from two frames of ``sample_id,
    _content`` (:func:`content_hashes`), one row per sample. A null content (a sample whose run recorded no
    content) pairs with nothing. Two sides listing the same ids in the same order (the usual case) are paired row
    by row, without a join."""
    left = baseline.select("sample_id", CONTENT).with_row_index(POSITION_BASELINE)
    if baseline.height == candidate.height and baseline["sample_id"].equals(candidate["sample_id"]):
        both = left.with_columns(
            pl.col(POSITION_BASELINE).alias(POSITION_CANDIDATE), candidate[CONTENT].alias("_other")
        )
        only_baseline = only_candidate = 0
    else:
        right = candidate.select("sample_id", pl.col(CONTENT).alias("_other")).with_row_index(POSITION_CANDIDATE)
        joined = left.join(right, on="sample_id", how="full", coalesce=True)
        in_baseline, in_candidate = pl.col(POSITION_BASELINE).is_not_null(), pl.col(POSITION_CANDIDATE).is_not_null()
        both = joined.filter(in_baseline & in_candidate).sort(POSITION_BASELINE)
        only_baseline = int(joined.select((in_baseline & ~in_candidate).sum()).item())
        only_candidate = int(joined.select((~in_baseline & in_candidate).sum()).item())
    same = pl.col(CONTENT).is_not_null() & (pl.col(CONTENT) == pl.col("_other")).fill_null(False)
    differ = both.filter(~same)
    counts = Pairing(
        paired=both.height - differ.height,
        differ=differ.height,
        only_baseline=only_baseline,
        only_candidate=only_candidate,
        differing_ids=differ["sample_id"].head(LISTED).to_list(),
    )
    return both.filter(same).select("sample_id", POSITION_BASELINE, POSITION_CANDIDATE), counts
