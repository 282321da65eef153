"""Generate the judge-agents demo: generated-image iterations for two briefs, references and guidelines.

Run from anywhere: ``python datasets/agents_demo/generate.py``. Deterministic drawings (Pillow):

- ``acme-cola``: a red can with a white "ACME COLA" label and a yellow sun. Over 5 iterations the
  candidates drift *toward* the brief (colour converges to brand red, the misspelt label is fixed),
  then improve only marginally (a plateau).
- ``bluebird-tea``: a navy tea box with a gold triangle logo and "BLUE BIRD TEA". The candidates drift
  *away* from the brief (navy turns purple-grey, the logo shrinks, the text degrades).

Each iteration has two candidates (``a``, ``b``). ``reference_image`` is the on-brief rendering.
Guidelines: ``guidelines/acme-brand.md`` (Markdown) and ``guidelines/bluebird-packaging.docx`` (DOCX).
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "images"
GUIDES = HERE / "guidelines"
SIZE = (160, 120)
ITERATIONS = 5

BRIEFS = {
    "acme-cola": (
        "Product shot for the ACME COLA summer campaign: one brand-red (#D62828) can standing centred on a white "
        "background, the label reading ACME COLA in white capitals, and a small yellow sun in the top-right corner."
    ),
    "bluebird-tea": (
        "Packaging render of the BLUE BIRD TEA box: a navy (#1B2A4A) box on a light grey background, a gold "
        "(#C9A227) triangle logo above the words BLUE BIRD TEA in white capitals."
    ),
}
BASE_PROMPTS = {
    "acme-cola": "studio photo of a red soda can with the text ACME COLA, white background, yellow sun",
    "bluebird-tea": "3d render of a navy blue tea box with a gold triangle logo and the text BLUE BIRD TEA",
}
# Scripted panel scores (0-100) of each iteration's winner, fed back as previous_scores.
WINNER_SCORES = {"acme-cola": [55, 63, 69, 70, 71], "bluebird-tea": [66, 64, 61, 60, 58]}
PROMPT_ADDITIONS = {
    "acme-cola": [
        "",
        ", the label must read ACME COLA",
        ", brand red #D62828 can, label must read ACME COLA",
        ", brand red #D62828 can centred, label must read ACME COLA, sun top-right",
        ", brand red #D62828 can centred, crisp white label ACME COLA, small yellow sun top-right",
    ],
    "bluebird-tea": ["", ", moody lighting", ", moody purple lighting", ", cinematic haze", ", cinematic haze, muted"],
}


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


def cola(progress: float, jitter: int) -> Image.Image:
    """progress 0 (off-brief) .. 1 (on-brief)."""
    image = Image.new("RGB", SIZE, mix((235, 228, 210), (255, 255, 255), progress))
    draw = ImageDraw.Draw(image)
    red = mix((150, 60, 110), (214, 40, 40), progress)
    x = round(25 + 30 * progress) + jitter
    draw.rounded_rectangle((x, 20, x + 50, 105), radius=round(4 + 8 * progress), fill=red)
    label = "ACME COLA" if progress >= 0.5 else "ACNE C0LA"
    draw.text((x + 4, 56), label, fill=(255, 255, 255), font=font(7))
    if progress >= 0.25:
        sun = round(6 + 6 * progress)
        draw.ellipse((140 - sun, 14 - sun // 2, 140 + sun, 14 + sun * 3 // 2), fill=(245, 200, 30))
    return image


def tea(progress: float, jitter: int) -> Image.Image:
    """progress 1 (on-brief) .. 0 (drifted away)."""
    image = Image.new("RGB", SIZE, (225, 225, 228))
    draw = ImageDraw.Draw(image)
    navy = mix((120, 100, 130), (27, 42, 74), progress)
    draw.rectangle((45 + jitter, 15, 115 + jitter, 108), fill=navy)
    half = round(6 + 10 * progress)
    cx = 80 + jitter
    draw.polygon(
        [(cx, 28), (cx + half, 28 + 2 * half), (cx - half, 28 + 2 * half)],
        fill=mix((170, 160, 140), (201, 162, 39), progress),
    )
    text = "BLUE BIRD TEA" if progress > 0.6 else ("BLUE BRD TEA" if progress > 0.3 else "BLU BRD TE")
    draw.text((50 + jitter, 85), text, fill=(255, 255, 255), font=font(8))
    return image


def save(image: Image.Image, name: str) -> str:
    IMAGES.mkdir(parents=True, exist_ok=True)
    image.save(IMAGES / name, optimize=True)
    return f"images/{name}"


def guidelines() -> None:
    GUIDES.mkdir(parents=True, exist_ok=True)
    (GUIDES / "acme-brand.md").write_text(
        "# ACME brand guidelines\n\n"
        "## Colour\n"
        "ACME red is #D62828. Cans are always brand red; never burgundy, purple or orange. "
        "Backgrounds for product shots are pure white.\n\n"
        "## Logo and label\n"
        "The label reads ACME COLA in white capitals. The wordmark is never misspelt, stretched or recoloured. "
        "Keep clear space around the label equal to the height of the letter A.\n\n"
        "## Composition\n"
        "The can stands upright and centred. The summer sun is a small yellow circle in the top-right corner and "
        "never overlaps the can.\n",
        encoding="utf-8",
    )
    import docx

    document = docx.Document()
    document.core_properties.author = "vision_eval demo"
    document.add_heading("Blue Bird Tea packaging", level=1)
    document.add_heading("Colours", level=2)
    document.add_paragraph("The box is navy #1B2A4A. The triangle logo is gold #C9A227. No purple or grey casts.")
    document.add_heading("Logo and text", level=2)
    document.add_paragraph(
        "The gold triangle logo sits centred above the product name. The name reads BLUE BIRD TEA in white "
        "capitals, fully spelt out, on one line."
    )
    document.add_heading("Lighting", level=2)
    document.add_paragraph("Neutral, even studio lighting. No haze, fog or coloured lighting effects.")
    document.core_properties.created = document.core_properties.modified = datetime(2026, 1, 1)
    buffer = io.BytesIO()
    document.save(buffer)
    # zip entries carry the current time: rewrite them with a fixed one so the file (and its sha256) is stable
    with zipfile.ZipFile(buffer) as source, zipfile.ZipFile(GUIDES / "bluebird-packaging.docx", "w") as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(info.filename))


def main() -> None:
    guidelines()
    rows = []
    references = {
        "acme-cola": save(cola(1.0, 0), "acme-cola-reference.png"),
        "bluebird-tea": save(tea(1.0, 0), "bluebird-tea-reference.png"),
    }
    for brief_id, brief in BRIEFS.items():
        for iteration in range(1, ITERATIONS + 1):
            for candidate, jitter in (("a", 0), ("b", 6)):
                step = (iteration - 1) / (ITERATIONS - 1)
                if brief_id == "acme-cola":
                    # fast early gains, then a plateau; candidate b lags a little behind
                    progress = min(1.0, [0.1, 0.45, 0.75, 0.85, 0.9][iteration - 1] - (0.1 if candidate == "b" else 0))
                    image = cola(max(progress, 0.0), jitter)
                else:
                    progress = max(0.0, 1.0 - 0.8 * step - (0.05 if candidate == "b" else 0))
                    image = tea(progress, jitter)
                name = f"{brief_id}-it{iteration}-{candidate}.png"
                rows.append(
                    {
                        "id": f"{brief_id}-it{iteration}-{candidate}",
                        "brief_id": brief_id,
                        "brief": brief,
                        "prompt": BASE_PROMPTS[brief_id] + PROMPT_ADDITIONS[brief_id][iteration - 1],
                        "images": [save(image, name)],
                        "iteration": iteration,
                        "max_iterations": 10,
                        "previous_scores": WINNER_SCORES[brief_id][: iteration - 1],
                        "reference_image": references[brief_id],
                    }
                )
    with (HERE / "agents_demo.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    print(f"wrote {len(rows)} rows to {HERE / 'agents_demo.jsonl'}")


if __name__ == "__main__":
    main()
