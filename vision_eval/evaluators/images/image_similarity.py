"""``image_similarity``: a generated image against a reference image, deterministically.

Three similarities, each a dimension in 0..1: ``ssim`` (structural similarity, scikit-image, on RGB
resized to a common size, negative values clipped to 0), ``phash`` (1 - Hamming distance / bits of
the perceptual hashes, imagehash) and ``histogram`` (1 - total-variation distance between joint RGB
colour histograms). The row score is their weighted mean.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl
from pydantic import Field, field_validator

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.example import PHOTOS, Example
from vision_eval.images.refs import image_ref, load_bytes
from vision_eval.images.roots import roots_of
from vision_eval.results import ERROR, PROCESSED, rows_frame

METRICS = ("ssim", "phash", "histogram")


class ImageSimilaritySettings(EvaluatorSettings):
    """Settings of ``image_similarity``."""

    reference_column: str = "reference_image"
    """Column holding the reference image (a path relative to the dataset root, or any image value)."""
    image_index: int = Field(0, ge=0)
    """Which image of the row's ``images`` list is compared (0: the first)."""
    weights: dict[str, float] = {"ssim": 1.0, "phash": 1.0, "histogram": 1.0}
    """Weight of each metric (``ssim``, ``phash``, ``histogram``) in the row score; 0 leaves one out."""
    max_side: int = Field(256, ge=16)
    """Both images are resized to the reference's aspect with this longest side before comparing."""
    hash_size: int = Field(8, ge=4, le=32)
    """Perceptual hash side (the hash has hash_size² bits)."""
    histogram_bins: int = Field(8, ge=2, le=64)
    """Bins per RGB channel of the joint colour histogram."""

    @field_validator("weights")
    @classmethod
    def _check_weights(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(METRICS))
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; known: {list(METRICS)}")
        if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
            raise ValueError("weights must be >= 0 with a positive sum")
        return value


class ImageDecodeError(ValueError):
    """An image that cannot be decoded; the message is the row's error reason."""


def decode_rgb(data: bytes, label: str) -> Any:
    """A fully loaded, upright (EXIF orientation applied) RGB PIL image, or ``ImageDecodeError`` naming
    ``label``; decompression bombs are refused like everywhere else."""
    from PIL import Image

    from vision_eval.images.media import ImageError, decode

    if not data:
        raise ImageDecodeError(f"{label} is empty")
    try:
        image = decode(data, any_format=True).image
    except ImageError as exc:
        raise ImageDecodeError(f"cannot decode {label}: {exc}") from None
    if image.mode in ("RGBA", "LA", "P", "PA"):
        background = Image.new("RGB", image.size, (255, 255, 255))
        rgba = image.convert("RGBA")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def common_size(size: tuple[int, int], max_side: int) -> tuple[int, int]:
    """The reference's size scaled down so its longest side is at most ``max_side``."""
    width, height = size
    scale = min(1.0, max_side / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def ssim_similarity(a: Any, b: Any) -> float:
    """SSIM of two same-size RGB arrays (uint8), in -1..1."""
    from skimage.metrics import structural_similarity

    side = min(a.shape[0], a.shape[1])
    window = min(7, side if side % 2 else side - 1)
    if window < 3:
        return 1.0 if (a == b).all() else 0.0
    # scikit-image leaves structural_similarity unannotated.
    ssim = structural_similarity(a, b, channel_axis=2, data_range=255, win_size=window)  # type: ignore[no-untyped-call]
    return float(ssim)


def phash_distance(a: Any, b: Any, hash_size: int) -> int:
    """Hamming distance between the perceptual hashes of two PIL images."""
    import imagehash

    return int(imagehash.phash(a, hash_size=hash_size) - imagehash.phash(b, hash_size=hash_size))


def histogram_distance(a: Any, b: Any, bins: int) -> float:
    """Total-variation distance (0..1) between the joint RGB histograms of two uint8 arrays."""
    import numpy as np

    def hist(pixels: Any) -> Any:
        quantized = (pixels.reshape(-1, 3).astype(np.int64) * bins) // 256
        index = (quantized[:, 0] * bins + quantized[:, 1]) * bins + quantized[:, 2]
        counts = np.bincount(index, minlength=bins**3).astype(np.float64)
        return counts / counts.sum()

    return float(0.5 * np.abs(hist(a) - hist(b)).sum())


def compare(candidate: Any, reference: Any, settings: ImageSimilaritySettings) -> dict[str, Any]:
    """The three metrics for two decoded RGB PIL images (raw values and 0..1 similarities)."""
    import numpy as np
    from PIL import Image

    size = common_size(reference.size, settings.max_side)
    ref = reference.resize(size, Image.Resampling.BILINEAR) if reference.size != size else reference
    cand = candidate.resize(size, Image.Resampling.BILINEAR) if candidate.size != size else candidate
    a, b = np.asarray(cand), np.asarray(ref)
    values: dict[str, Any] = {"size": list(size)}
    similarities: dict[str, float] = {}
    weights = settings.weights
    if weights.get("ssim", 0) > 0:
        values["ssim"] = ssim_similarity(a, b)
        similarities["ssim"] = max(0.0, values["ssim"])
    if weights.get("phash", 0) > 0:
        bits = settings.hash_size**2
        values["phash_distance"], values["phash_bits"] = phash_distance(cand, ref, settings.hash_size), bits
        similarities["phash"] = 1.0 - values["phash_distance"] / bits
    if weights.get("histogram", 0) > 0:
        values["histogram_distance"] = histogram_distance(a, b, settings.histogram_bins)
        similarities["histogram"] = 1.0 - values["histogram_distance"]
    return {"values": values, "similarities": similarities}


class ImageSimilarity(Evaluator[ImageSimilaritySettings]):
    """SSIM, perceptual-hash and colour-histogram similarity of a row's image to its reference image."""

    type_name: ClassVar[str] = "image_similarity"
    example: ClassVar[Example] = Example(
        {"type": "image_similarity", "reference_column": "reference_image", "threshold": 0.9},
        [
            {"id": "a", "images": ["images/cat.png"], "reference_image": "images/cat.png"},
            {"id": "b", "images": ["images/dog.png"], "reference_image": "images/cat.png"},
        ],
        PHOTOS,
    )
    default_threshold: ClassVar[float | None] = 0.75

    def columns_needed(self) -> tuple[str, ...]:
        return ("images", self.settings.reference_column)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        root = roots_of(self.context)
        references: dict[str, Any] = {}  # a reference shared by many rows is decoded once
        rows, dims = [], []
        for sample_id, images, reference in zip(
            batch["id"].to_list(), batch["images"].to_list(), batch[s.reference_column].to_list(), strict=True
        ):
            try:
                if len(images) <= s.image_index:
                    raise ImageDecodeError(f"row has {len(images)} image(s); image_index is {s.image_index}")
                candidate = decode_rgb(load_bytes(images[s.image_index]), f"image {s.image_index + 1}")
                ref_value = reference[0] if isinstance(reference, list) and reference else reference
                ref = image_ref(ref_value, root)
                if ref is None:
                    raise ImageDecodeError(f"{s.reference_column} is empty")
                key = ref.get("sha256") or ref.get("path") or ""
                if key not in references or not key:
                    references[key] = decode_rgb(load_bytes(ref), f"reference image ({s.reference_column})")
                found = compare(candidate, references[key], s)
            except (ImageDecodeError, ValueError) as exc:
                rows.append({"sample_id": sample_id, "status": ERROR, "error": str(exc)})
                continue
            except Exception as exc:  # anything else about this row's pixels: a plain reason, the type in details
                error = "the images could not be compared (e.g. an unusual pixel format)"
                rows.append(
                    {
                        "sample_id": sample_id,
                        "status": ERROR,
                        "error": error,
                        "details": {"exception": type(exc).__name__},
                    }
                )
                continue
            total = sum(s.weights.get(m, 0.0) for m in found["similarities"])
            score = sum(v * s.weights[m] for m, v in found["similarities"].items()) / total
            rows.append({"sample_id": sample_id, "status": PROCESSED, "score": score, "details": found["values"]})
            dims += [
                {"sample_id": sample_id, "dimension": m, "score": v, "weight": s.weights[m]}
                for m, v in found["similarities"].items()
            ]
        dimensions = pl.DataFrame(
            dims, schema={"sample_id": pl.Utf8, "dimension": pl.Utf8, "score": pl.Float64, "weight": pl.Float64}
        )
        return EvalOutput(rows_frame(rows), dimensions=dimensions)
