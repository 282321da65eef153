"""Generate the shipped demo dataset: images under images/ and the rows in demo.jsonl (and demo_b.jsonl, the same
samples with a second model's responses).

Run from anywhere: ``python datasets/demo/generate.py``. Deterministic: the same files every time.
Photos are scikit-image's sample images; charts, documents, counting scenes, detection scenes and
before/after pairs are drawn with Pillow so every expected value is known exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "images"
COLOURS = {"red": (220, 40, 40), "blue": (40, 80, 220), "green": (40, 170, 70), "yellow": (235, 200, 30)}


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def save(image: Image.Image, name: str) -> str:
    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / name
    if name.endswith(".jpg"):
        image.convert("RGB").save(path, quality=80, optimize=True)
    else:
        image.save(path, optimize=True)
    return f"images/{name}"


def photo(name: str, loader: str, side: int = 320) -> str:
    import skimage.data

    image = Image.fromarray(getattr(skimage.data, loader)())
    image.thumbnail((side, side))
    return save(image, name)


def shape(draw: ImageDraw.ImageDraw, kind: str, box: tuple[int, int, int, int], colour: tuple[int, int, int]) -> None:
    x1, y1, x2, y2 = box
    if kind == "circle":
        draw.ellipse(box, fill=colour)
    elif kind == "square":
        draw.rectangle(box, fill=colour)
    else:
        draw.polygon([((x1 + x2) // 2, y1), (x2, y2), (x1, y2)], fill=colour)


def scene(
    name: str, items: list[tuple[str, str, tuple[int, int, int, int]]], size: tuple[int, int] = (320, 240)
) -> str:
    image = Image.new("RGB", size, (245, 245, 240))
    draw = ImageDraw.Draw(image)
    for kind, colour, box in items:
        shape(draw, kind, box, COLOURS[colour])
    return save(image, name)


def grid(kind: str, colour: str, count: int, start: int, offset_y: int = 0) -> list[tuple[str, str, tuple]]:
    items = []
    for i in range(count):
        x = 12 + ((start + i) % 6) * 50
        y = 12 + ((start + i) // 6) * 55 + offset_y
        items.append((kind, colour, (x, y, x + 36, y + 36)))
    return items


def text_image(name: str, lines: list[str], size: tuple[int, int] = (360, 140)) -> str:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    y = 14
    for i, line in enumerate(lines):
        draw.text((16, y), line, fill="black", font=font(26 if i == 0 else 18))
        y += 38 if i == 0 else 26
    return save(image, name)


def bar_chart(name: str, title: str, labels: list[str], values: list[float]) -> str:
    image = Image.new("RGB", (400, 260), "white")
    draw = ImageDraw.Draw(image)
    draw.text((16, 8), title, fill="black", font=font(18))
    top = max(values)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = 40 + i * 85
        height = int(170 * value / top)
        draw.rectangle((x, 230 - height, x + 50, 230), fill=(60, 110, 200))
        draw.text((x, 236), label, fill="black", font=font(12))
        draw.text((x, 214 - height), f"${value}M", fill="black", font=font(12))
    draw.line((30, 230, 390, 230), fill="black")
    return save(image, name)


def invoice_image(name: str, fields: dict) -> str:
    lines = [
        f"INVOICE {fields['invoice_number']}",
        fields["vendor_name"],
        f"Date: {fields['invoice_date_printed']}",
        *[f"{it['quantity']} x {it['description']}  {it['amount']:.2f}" for it in fields["line_items"]],
        f"TOTAL {fields['currency']} {fields['total_amount']:,.2f}",
    ]
    return text_image(name, lines, size=(420, 60 + 26 * len(lines)))


def describe_rows() -> list[dict]:
    return [
        {
            "id": "describe-astronaut",
            "images": [photo("astronaut.jpg", "astronaut")],
            "input": "Describe this photo.",
            "output": "A smiling astronaut in a white spacesuit poses in front of an American flag, "
            "holding a helmet. A second astronaut is visible in the background.",
            "expected_output": "Portrait of an astronaut in a white NASA spacesuit in front of an American flag; "
            "a space shuttle model is visible at the left.",
            "notes": "hallucination: there is no second astronaut",
        },
        {
            "id": "describe-coffee",
            "images": [photo("coffee.jpg", "coffee")],
            "input": "Describe this photo.",
            "output": "A cup of coffee with latte art on a saucer, with a spoon on the side, on a red table.",
            "expected_output": "Overhead view of a cup of coffee on a saucer with a spoon, on a red surface.",
        },
        {
            "id": "describe-cat",
            "images": [photo("chelsea.jpg", "chelsea")],
            "input": "What animal is in the picture, and what is it doing?",
            "output": "An orange tabby cat is looking to the side. Two dogs are sleeping behind it.",
            "expected_output": "A tabby cat looking to the left against a plain background.",
            "notes": "hallucination: the dogs",
        },
        {
            "id": "describe-rocket",
            "images": [photo("rocket.jpg", "rocket")],
            "input": "Describe this photo.",
            "output": "A rocket stands on a launch pad next to its service tower under a clear sky.",
            "expected_output": "A rocket on a launch pad beside a tall service structure, blue sky.",
        },
    ]


def count_rows() -> list[dict]:
    cases = [
        (
            "count-1",
            [("circle", "red", 5), ("square", "blue", 3)],
            "5 circles, 3 squares",
            "I count 5 red circles and 3 blue squares.",
        ),
        (
            "count-2",
            [("circle", "red", 5), ("square", "blue", 8)],
            "5 circles, 8 squares",
            "There are five circles and three squares in the image.",
        ),
        ("count-3", [("triangle", "green", 7)], "7", "I can see 7 green triangles."),
        ("count-4", [("square", "yellow", 12)], "12 squares", "The picture shows a dozen yellow squares."),
        (
            "count-5",
            [("circle", "blue", 4), ("triangle", "red", 2)],
            "4 circles, 2 triangles",
            "I see 4 blue circles and 3 red triangles.",
        ),
    ]
    rows = []
    for row_id, groups, expected, output in cases:
        items, start = [], 0
        for kind, colour, n in groups:
            items += grid(kind, colour, n, start)
            start += n
        rows.append(
            {
                "id": row_id,
                "images": [scene(f"{row_id}.png", items, size=(320, 70 + 55 * ((start - 1) // 6)))],
                "input": "How many objects of each shape are in the image?",
                "output": output,
                "expected_output": expected,
            }
        )
    return rows


def ocr_rows() -> list[dict]:
    cases = [
        (
            "ocr-1",
            ["Project Proposal Q1 2026", "Budget, timeline and deliverables"],
            "Project Proposal Q1 2026\nBudget, timeline and deliverables",
            ["budget", "timeline", "deliverables"],
        ),
        (
            "ocr-2",
            ["Quarterly Review", "Revenue up 12% year over year"],
            "Quartely Reveiw\nRevenue up 12% year over year",
            ["revenue", "year over year"],
        ),
        (
            "ocr-3",
            ["Meeting Notes", "Owner: Dana Lee  Due: Friday"],
            "Meeting Notes\nOwner: Dana Lee",
            ["owner", "due"],
        ),
        ("ocr-4", ["EXIT", "Emergency use only"], "EXIT - Emergency use only", ["exit", "emergency"]),
    ]
    rows = []
    for row_id, lines, output, keywords in cases:
        rows.append(
            {
                "id": row_id,
                "images": [text_image(f"{row_id}.png", lines)],
                "input": "Transcribe all text in the image.",
                "output": output,
                "expected_output": "\n".join(lines),
                "keywords": keywords,
            }
        )
    return rows


def chart_rows() -> list[dict]:
    quarters = ["Q1 2025", "Q2 2025", "Q3 2025", "Q4 2025"]
    cases = [
        (
            "chart-1",
            [1.2, 1.5, 1.9, 2.4],
            "Revenue grew every quarter: Q1 2025 $1.2M, Q2 $1.5M, Q3 $1.9M and Q4 2025 peaked at $2.4M, "
            "up 58% from Q1.",
            "Q1 2025: $1.2M; Q2 2025: $1.5M; Q3 2025: $1.9M; Q4 2025: $2.4M; growth: 58%",
        ),
        (
            "chart-2",
            [3.0, 2.6, 2.2, 2.9],
            "1. Q1 2025: about 3 million dollars\n2. Q2 2025: $2.6M\n3. Q3 2025: $2.2M\n4. Q4 2025: $3.9M",
            "Q1 2025: $3.0M; Q2 2025: $2.6M; Q3 2025: $2.2M; Q4 2025: $2.9M",
        ),
        (
            "chart-3",
            [0.8, 0.9, 1.1, 1.3],
            "Sales rose from $800K in Q1 2025 to $1.3 million in Q4 2025, a 62.5 percent increase.",
            "Q1 2025: $0.8M; Q4 2025: $1.3M; growth: 62.5%",
        ),
    ]
    rows = []
    for row_id, values, output, expected in cases:
        rows.append(
            {
                "id": row_id,
                "images": [bar_chart(f"{row_id}.png", "Quarterly revenue 2025 (USD)", quarters, values)],
                "input": "Read the values from this chart and summarise the trend.",
                "output": output,
                "expected_output": expected,
            }
        )
    return rows


def invoice_rows() -> list[dict]:
    base = [
        {
            "invoice_number": "INV-2025-0042",
            "vendor_name": "Northwind Traders",
            "invoice_date": "2025-01-15",
            "invoice_date_printed": "15-JAN-2025",
            "currency": "USD",
            "line_items": [
                {"description": "Widgets", "quantity": 10, "amount": 250.0},
                {"description": "Gadgets", "quantity": 5, "amount": 1250.0},
            ],
            "total_amount": 1500.0,
        },
        {
            "invoice_number": "INV-7781",
            "vendor_name": "Contoso Ltd.",
            "invoice_date": "2025-02-03",
            "invoice_date_printed": "03/02/2025",
            "currency": "EUR",
            "line_items": [{"description": "Consulting", "quantity": 8, "amount": 960.0}],
            "total_amount": 960.0,
        },
        {
            "invoice_number": "A-1009",
            "vendor_name": "Fabrikam Inc",
            "invoice_date": "2024-12-31",
            "invoice_date_printed": "2024-12-31",
            "currency": "USD",
            "line_items": [
                {"description": "Paper", "quantity": 20, "amount": 80.0},
                {"description": "Toner", "quantity": 2, "amount": 140.0},
            ],
            "total_amount": 220.0,
        },
    ]
    outputs = [
        # Correct values, date printed differently, numbers as formatted strings, line items swapped.
        '```json\n{"invoice_number": "INV-2025-0042", "vendor_name": "Northwind Traders", '
        '"invoice_date": "15-JAN-2025", "currency": "USD", "total_amount": "$1,500.00", "line_items": '
        '[{"description": "Gadgets", "quantity": 5, "amount": 1250.0}, '
        '{"description": "Widgets", "quantity": 10, "amount": 250.0}]}\n```',
        # Day-first date read month-first (wrong), vendor typo.
        'Here is the extracted data: {"invoice_number": "INV-7781", "vendor_name": "Contoso Ltd", '
        '"invoice_date": "2025-03-02", "currency": "EUR", "total_amount": 960, '
        '"line_items": [{"description": "Consulting", "quantity": 8, "amount": 960}]}',
        # Wrong total, a missing field.
        '{"invoice_number": "A-1009", "vendor_name": "Fabrikam Inc", "invoice_date": "2024-12-31", '
        '"total_amount": 2200.0, "line_items": [{"description": "Paper", "quantity": 20, "amount": 80.0}, '
        '{"description": "Toner", "quantity": 2, "amount": 140.0}]}',
    ]
    rows = []
    for i, (fields, output) in enumerate(zip(base, outputs, strict=True), start=1):
        expected = {k: v for k, v in fields.items() if k != "invoice_date_printed"}
        rows.append(
            {
                "id": f"invoice-{i}",
                "images": [invoice_image(f"invoice-{i}.png", fields)],
                "input": "Extract invoice_number, vendor_name, invoice_date, currency, total_amount and "
                "line_items as JSON.",
                "output": output,
                "expected_output": json.dumps(expected),
            }
        )
    rows.append(
        {
            "id": "invoice-4",
            "images": [invoice_image("invoice-4.png", {**base[0], "invoice_number": "INV-2025-0043"})],
            "input": "Extract the invoice fields as JSON.",
            "output": "Sorry, I could not read this invoice.",
            "expected_output": json.dumps(
                {k: v for k, v in {**base[0], "invoice_number": "INV-2025-0043"}.items() if k != "invoice_date_printed"}
            ),
            "notes": "response is not JSON",
        }
    )
    return rows


def detect_rows() -> list[dict]:
    cases = [
        (
            "detect-1",
            [("circle", "red", (30, 40, 110, 120)), ("square", "blue", (180, 60, 260, 140))],
            [("circle", (32, 38, 112, 118)), ("square", (178, 62, 258, 142))],
        ),
        (
            "detect-2",
            [("circle", "green", (20, 20, 80, 80)), ("triangle", "red", (150, 100, 230, 200))],
            [("circle", (20, 20, 80, 80)), ("square", (150, 100, 230, 200))],
        ),
        (
            "detect-3",
            [
                ("square", "yellow", (40, 40, 140, 140)),
                ("square", "blue", (200, 30, 280, 110)),
                ("circle", "red", (120, 160, 180, 220)),
            ],
            [("square", (60, 60, 160, 160)), ("square", (200, 30, 280, 110))],
        ),
    ]
    rows = []
    for row_id, items, predicted in cases:
        expected = [{"label": kind, "box": list(box)} for kind, _, box in items]
        rows.append(
            {
                "id": row_id,
                "images": [scene(f"{row_id}.png", items)],
                "input": "Detect every shape and return a JSON list of {label, box: [x1, y1, x2, y2]}.",
                "output": json.dumps([{"label": label, "box": list(box)} for label, box in predicted]),
                "expected_output": json.dumps(expected),
            }
        )
    return rows


def compare_rows() -> list[dict]:
    before = [("circle", "red", (40, 60, 120, 140)), ("square", "blue", (180, 60, 260, 140))]
    after_1 = [("circle", "red", (40, 60, 120, 140)), ("square", "green", (180, 60, 260, 140))]
    after_2 = [("circle", "red", (140, 100, 220, 180))]
    return [
        {
            "id": "compare-1",
            "images": [scene("compare-1-before.png", before), scene("compare-1-after.png", after_1)],
            "input": "What changed between the first and the second image?",
            "output": "The blue square on the right turned green; the red circle on the left is unchanged.",
            "expected_output": "The square on the right changed colour from blue to green.",
        },
        {
            "id": "compare-2",
            "images": [scene("compare-2-before.png", before), scene("compare-2-after.png", after_2)],
            "input": "What changed between the first and the second image?",
            "output": "Nothing changed between the two images.",
            "expected_output": "The blue square was removed and the red circle moved to the centre-right.",
            "notes": "missed both changes",
        },
    ]


def judge_rows() -> list[dict]:
    items = [
        ("circle", "red", (30, 30, 90, 90)),
        ("square", "blue", (120, 30, 180, 90)),
        ("triangle", "green", (210, 30, 270, 90)),
    ]
    return [
        {
            "id": "reasoning-1",
            "task": "reasoning",
            "images": [scene("reasoning-1.png", items, size=(300, 120))],
            "input": "Which shape is between the circle and the triangle, and what colour is it?",
            "output": "The square is in the middle because it is to the right of the circle and left of the "
            "triangle; it is blue.",
            "expected_output": "The blue square.",
        },
        {
            "id": "structured-1",
            "task": "structured",
            "images": [scene("structured-1.png", items, size=(300, 120))],
            "input": "List the shapes as JSON: [{shape, colour}].",
            "output": '[{"shape": "circle", "colour": "red"}, {"shape": "square", "colour": "blue"}, '
            '{"shape": "triangle", "colour": "red"}]',
            "expected_output": '[{"shape": "circle", "colour": "red"}, {"shape": "square", "colour": "blue"}, '
            '{"shape": "triangle", "colour": "green"}]',
        },
        {
            "id": "quality-1",
            "task": "quality",
            "images": [photo("camera.jpg", "camera")],
            "input": "Assess the technical and aesthetic quality of this photo.",
            "output": "Sharp black-and-white portrait of a photographer with a tripod; exposure is balanced, "
            "the subject sits on the left third, the sky is plain. Overall 7/10.",
            "expected_output": "",
        },
        {
            "id": "activity-1",
            "task": "activity",
            "images": [photo("astronaut-activity.jpg", "astronaut")],
            "input": "What is the person doing?",
            "output": "An astronaut is floating in space while repairing a satellite.",
            "expected_output": "An astronaut posing for an official portrait.",
            "notes": "wrong activity",
        },
    ]


MODEL_B = {
    "count-1": "I count 5 red circles and 2 blue squares.",
    "count-2": "I count 5 circles and 8 squares.",
    "ocr-2": "Quarterly Review\nRevenue up 12% year over year",
    "chart-2": "Q1 2025: $3.0M; Q2 2025: $2.6M; Q3 2025: $2.2M; Q4 2025: $2.9M",
}
"""A second model's responses where they differ from the first's: demo_b.jsonl holds the same samples with these
outputs (the README's A/B comparison: `vision-eval compare`)."""


def write_rows(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            ordered = {
                "id": row["id"],
                "task": row["task"],
                **{k: v for k, v in row.items() if k not in ("id", "task")},
            }
            handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")


def model_b(rows: list[dict]) -> list[dict]:
    """The rows with the second model's responses."""
    return [{**row, "output": MODEL_B.get(row["id"], row["output"])} for row in rows]


def main() -> None:
    sections = {
        "describe": describe_rows(),
        "count": count_rows(),
        "ocr": ocr_rows(),
        "chart": chart_rows(),
        "invoice": invoice_rows(),
        "detect": detect_rows(),
        "compare": compare_rows(),
    }
    rows = [{"task": task, **row} for task, items in sections.items() for row in items]
    rows += judge_rows()
    write_rows(HERE / "demo.jsonl", rows)
    write_rows(HERE / "demo_b.jsonl", model_b(rows))
    size = sum(p.stat().st_size for p in IMAGES.iterdir())
    print(f"wrote {len(rows)} rows and {len(list(IMAGES.iterdir()))} images ({size / 1024:.0f} KiB) to {HERE}")


if __name__ == "__main__":
    main()
