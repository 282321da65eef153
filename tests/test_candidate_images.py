"""A model under test reads the page the dataset holds: a real OCR model (RapidOCR) behind a local OpenAI-compatible
endpoint reads rendered 1700x2200 pages with 14-20 px text through the candidate path as well as it reads the
original files, and worse through the former default (the judge's 1024-px JPEG q85)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vision_eval as ve
from vision_eval.testing.fake_providers import FakeProviders
from vision_eval.testing.ocr_model import OcrResponder, char_similarity, ocr_available, text_page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(ocr_available() is not None, reason=str(ocr_available())),
]

PAGES = {"small": (14, 15, 16, 17), "larger": (18, 19, 20)}
"""Page name -> the text sizes (px) its lines cycle through."""
AS_WELL = 0.98
"""The candidate path must read at least this share of what the model reads from the original files."""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The rendered pages in a dataset folder (``rows.jsonl`` + PNG files), and each page's text."""
    folder = tmp_path_factory.mktemp("pages")
    truths, rows = {}, []
    for seed, (name, sizes) in enumerate(PAGES.items()):
        data, truths[name] = text_page(seed, sizes)
        (folder / f"{name}.png").write_bytes(data)
        rows.append({"id": name, "input": "Read the page.", "images": [f"{name}.png"], "expected_output": truths[name]})
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder, truths


@pytest.fixture(scope="module")
def ocr() -> OcrResponder:
    return OcrResponder()


@pytest.fixture(scope="module")
def direct(pages: tuple[Path, dict[str, str]], ocr: OcrResponder) -> dict[str, float]:
    """What the model reads from the original files, handed to it directly."""
    folder, truths = pages
    return {name: char_similarity(ocr.read((folder / f"{name}.png").read_bytes()), t) for name, t in truths.items()}


@pytest.fixture(scope="module")
def ocr_server(ocr: OcrResponder) -> Iterator[FakeProviders]:
    with FakeProviders(responder=ocr) as fake:
        yield fake


def read_through_candidate(
    pages: tuple[Path, dict[str, str]], server: FakeProviders, tmp_path: Path, **image: Any
) -> tuple[dict[str, float], Any]:
    """Each page's similarity as read through the candidate path (``candidate.image`` = ``image``), and the run."""
    folder, truths = pages
    candidate = {"model": "openai/rapidocr", "api_base": server.openai_base, "api_key": "k", "cache": False,
                 "timeout_s": 900, "max_concurrency": 1, **({"image": image} if image else {})}  # fmt: skip
    result = ve.evaluate(str(folder / "rows.jsonl"), evaluators={"exact": {"type": "exact_match"}},
                         candidate=candidate, output_dir=tmp_path / "run")  # fmt: skip
    outputs = dict(zip(result.samples["id"].to_list(), result.samples["output"].to_list(), strict=True))
    return {name: char_similarity(outputs[name], truth) for name, truth in truths.items()}, result


def test_the_default_candidate_path_reads_small_text_as_well_as_the_original_files(
    pages: tuple[Path, dict[str, str]], direct: dict[str, float], ocr_server: FakeProviders, tmp_path: Path
) -> None:
    ocr_server.reset()
    read, result = read_through_candidate(pages, ocr_server, tmp_path)
    print(f"direct {direct}, default candidate path {read}")
    assert min(direct.values()) >= 0.9  # the pages are legible to this model at all
    for name in PAGES:
        assert read[name] >= AS_WELL * direct[name], (name, read, direct)
    # the local server received the dataset's own bytes, and run.json says so
    sent = (pages[0] / "small.png").read_bytes()
    assert any(
        r.body["messages"][0]["content"][-1]["image_url"]["url"].endswith(_b64(sent)) for r in ocr_server.requests
    )
    record = json.loads((tmp_path / "run" / "run.json").read_text())["images_sent"]["candidate"]["openai/rapidocr"]
    assert record["sizing"] == ["server: the source bytes"] and record["policy"]["max_side"] is None
    column = record["columns"]["images"]
    assert column["images"] == 2 and column["sent_as_source_bytes"] == 2 and column["re_encoded"] == {}
    assert column["sizes"] == {"1700x2200": 2} and column["media_types"] == {"image/png": 2}
    assert result.exit_code == 0


def test_the_former_default_1024_px_jpeg_reads_small_text_worse(
    pages: tuple[Path, dict[str, str]], direct: dict[str, float], ocr_server: FakeProviders, tmp_path: Path
) -> None:
    """What a candidate was sent before (the judge's cost cap): 791x1024, JPEG q85."""
    read, result = read_through_candidate(pages, ocr_server, tmp_path, max_side=1024, format="jpeg", quality=85)
    print(f"direct {direct}, 1024-px JPEG q85 path {read}")
    assert read["small"] < 0.8 * direct["small"], (read, direct)
    column = result.run_info["images_sent"]["candidate"]["openai/rapidocr"]["columns"]["images"]
    assert column["sizes"] == {"791x1024": 2} and column["media_types"] == {"image/jpeg": 2}
    assert column["re_encoded"] == {"format: jpeg": 2}


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()
