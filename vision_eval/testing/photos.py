"""Photo-like test images, made quickly: a smooth colour field, sensor-like noise and a few filled shapes, each
``seed`` giving a distinct image (a 4000x3000 JPEG in about 0.1 s), in any mode, format and EXIF orientation."""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=4)
def _layers(width: int, height: int) -> tuple[Any, Any]:
    """A smooth colour field and a noise field of this size (made once; photos roll and combine them)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(20240516)
    coarse = rng.integers(0, 256, (height // 100 + 2, width // 100 + 2, 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse).resize((width, height), Image.Resampling.BILINEAR))
    noise = rng.integers(0, 13, (height, width, 3), dtype=np.uint8)
    return field, noise


def photo_pixels(seed: int, width: int, height: int) -> Any:
    """An RGB PIL image: the colour field shifted by ``seed``, noise, and 20 ellipses of random colours."""
    import numpy as np
    from PIL import Image, ImageDraw

    field, noise = _layers(width, height)
    rng = np.random.default_rng(seed)
    shift = (int(rng.integers(0, height)), int(rng.integers(0, width)))
    pixels = np.roll(field, shift, axis=(0, 1)) // 2 + np.roll(noise, (shift[1] % 97, shift[0] % 89), axis=(0, 1)) * 2
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    for _ in range(20):
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        w, h = (int(v) for v in rng.integers(max(2, width // 40), max(3, width // 4), 2))
        draw.ellipse((x, y, x + w, y + h), fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    return image


def photo(
    seed: int,
    width: int = 4000,
    height: int = 3000,
    *,
    mode: str = "RGB",
    fmt: str = "JPEG",
    orientation: int = 1,
    quality: int = 90,
    progressive: bool = False,
) -> bytes:
    """The encoded bytes of a photo-like image of ``width`` x ``height`` stored pixels (a viewer turns it by
    ``orientation``, the EXIF tag), converted to ``mode`` (``RGB``, ``L``, ``CMYK``, ``RGBA``...)."""
    from PIL import Image

    image = photo_pixels(seed, width, height)
    if mode == "RGBA":
        alpha = Image.linear_gradient("L").resize((width, height))
        image = image.convert("RGBA")
        image.putalpha(alpha)
    elif mode != "RGB":
        image = image.convert(mode)
    options: dict[str, Any] = {"quality": quality, "progressive": progressive} if fmt == "JPEG" else {}
    if orientation != 1:
        exif = Image.Exif()
        exif[0x0112] = orientation
        options["exif"] = exif.tobytes()
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()
