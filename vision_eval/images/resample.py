"""Lanczos downscaling of a JPEG decoded at reduced size, with libvips (SIMD), as the fast path sends it.

Pillow's LANCZOS from a 2000x1500 draft to 1024x768 takes about 29 ms of CPU, more than the decode itself; libvips'
``reduce`` with its Lanczos-3 kernel takes about 4 ms for the same pixels. Its kernel is widened by the shrink
factor as Pillow's is, and both place output pixel i's centre at ``(i + 0.5) * shrink - 0.5`` in the source, so
the two differ only by rounding (within 7 levels, about 55 dB PSNR on photos). libvips centres the output on the
whole input, so a region that ends inside a pixel (a reduced decode of a size not divisible by its scale: the last
column or row stands for a fraction of a source pixel) would be shifted: those, and modes other than plain 8-bit
channels, are resized by Pillow.
"""

from __future__ import annotations

from typing import Any

_BANDS = {"L": 1, "RGB": 3, "CMYK": 4}
"""Pillow modes that libvips reduces as they are: 8-bit channels without alpha (no premultiplying needed)."""


def lanczos(image: Any, size: tuple[int, int], box: tuple[float, float, float, float] | None = None) -> Any:
    """``image.resize(size, LANCZOS, box=box)`` (a downscale), by libvips where it maps pixels as Pillow does."""
    from PIL import Image

    bands = _BANDS.get(image.mode)
    whole = box is None or tuple(box) == (0, 0, image.width, image.height)
    if bands is None or not whole or size[0] > image.width or size[1] > image.height:
        return image.resize(size, Image.Resampling.LANCZOS, box=box)
    import pyvips

    try:
        source = pyvips.Image.new_from_memory(image.tobytes(), image.width, image.height, bands, "uchar")
        reduced = source.reduce(image.width / size[0], image.height / size[1], kernel="lanczos3")
        if (reduced.width, reduced.height) != size:  # not met in testing; Pillow's size is the contract
            return image.resize(size, Image.Resampling.LANCZOS, box=box)
        pixels = reduced.write_to_memory()
    except pyvips.Error as exc:  # out of memory, or a libvips fault: the row's reason, not a crash
        raise ValueError(f"libvips cannot resize the image: {exc.message}") from None
    return Image.frombytes(image.mode, size, pixels)
