"""A real small model behind the fake providers: RapidOCR (PP-OCR's detection and recognition networks, whose weights
ship in the ``rapidocr_onnxruntime`` wheel) reads every image a request carries and answers with the text it found,
so a test measures what a model under test reads from the pixels it is sent::

    with FakeProviders(responder=OcrResponder()) as fake:  # any provider's wire format, e.g. openai/ at openai_base
        ...

Like a served vision model, it decodes the image it receives and its own processing decides the working size
(RapidOCR scales a page to at most 2000 px on the long side, then detects text lines at that size). Pages to read
are rendered here with Pillow's built-in scalable font, so no font file or image is stored.
"""

from __future__ import annotations

import io
import random
import threading
from typing import Any

from vision_eval.testing.fake_providers import PARSERS, FakeRequest

WORDS = ("invoice", "total", "amount", "due", "payment", "received", "balance", "account", "number", "order",
         "shipped", "quantity", "price", "unit", "tax", "date", "customer", "reference", "period", "statement",
         "credit", "debit")  # fmt: skip
PAGE_SIZE = (1700, 2200)
"""A letter page scanned at 200 dpi."""


def ocr_available() -> str | None:
    """``None`` when RapidOCR can run here, else why not (for a test's skip reason)."""
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError as exc:  # not installed, or OpenCV without its system libraries (libGL)
        return f"RapidOCR is not usable here: {exc} (pip install rapidocr_onnxruntime; apt-get install libgl1)"
    return None


class OcrResponder:
    """A fake provider's ``responder`` that answers with the text RapidOCR reads in each received image (one line per
    text line found, top to bottom; the images of a request in order, separated by a blank line)."""

    def __init__(self) -> None:
        self._engine: Any = None
        self._lock = threading.Lock()
        self.read_sizes: list[tuple[int, int]] = []
        """The size of every image read, in order."""

    def read(self, data: bytes) -> str:
        """The text RapidOCR reads in an encoded image."""
        from PIL import Image

        with self._lock:
            if self._engine is None:
                from rapidocr_onnxruntime import RapidOCR

                self._engine = RapidOCR()
            self.read_sizes.append(Image.open(io.BytesIO(data)).size)
            found, _ = self._engine(data, use_cls=False)  # upright pages: no orientation classifier
        return "\n".join(str(line[1]) for line in found or [])

    def __call__(self, request: FakeRequest) -> str:
        images = [value for kind, value in PARSERS[request.provider](request.body) if kind == "image"]
        return "\n\n".join(self.read(data) for data in images)


def text_page(seed: int, sizes: tuple[int, ...], lines: int = 18) -> tuple[bytes, str]:
    """A rendered page (PNG, :data:`PAGE_SIZE`) of ``lines`` lines of words and numbers in black on white, the line
    sizes cycling through ``sizes`` (px), and its text (one line per line)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random(seed)
    page = Image.new("L", PAGE_SIZE, 255)
    draw = ImageDraw.Draw(page)
    text = []
    for index in range(lines):
        size = sizes[index % len(sizes)]
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 7))) + f" {rng.randint(10, 99_999)}"
        draw.text((110 + rng.randint(0, 300), 90 + index * 110), line, fill=0, font=ImageFont.load_default(size))
        text.append(line)
    buffer = io.BytesIO()
    page.save(buffer, format="PNG")
    return buffer.getvalue(), "\n".join(text)


def char_similarity(read: str | None, truth: str) -> float:
    """Character similarity of a reading to the page's text, 0..1: 1 - normalized Levenshtein distance over the
    characters, whitespace removed (the OCR model joins words; spacing is not what is measured)."""
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.normalized_similarity("".join((read or "").split()), "".join(truth.split())))
