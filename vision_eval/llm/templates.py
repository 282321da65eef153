"""Sandboxed Jinja2 prompt templates whose image references become labels + pixels, in order.

``{{ image_reference }}`` (the first image) and ``{{ image_references }}`` (all of them) render
as text labels ("Image 1", "Image 2") where the template puts them; :func:`render_parts`
returns the text split at those labels with each image's pixels placed right after its first
label, so one message carries text and images in template order. Images the template never
mentions follow at the end, each after its label. Base64 never enters the text channel.

Benchmark prompts get three filters: ``options`` (a row's choices, from a list or a text holding a Python or JSON
list), ``lettered`` (``A. first`` / ``B. second``... one per line, as the reference harnesses list choices) and
``place_images`` (a question's ``<image n>`` placeholders replaced by the row's images, as lmms-eval lays out an
interleaved message: the text between them stripped, the images in order and without a label).
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from vision_eval.images.policy import PreparedImage

IMAGE_VARIABLES = ("image_reference", "image_references")
_MARKER = "\x00IMG{}\x00"
_MARKER_RE = re.compile("\x00(IMG|PIX)(\\d+)\x00")
_INLINE = "\x00PIX{}\x00"
"""An image placed without its "Image k" label (``place_images``)."""
_PLACEHOLDERS = re.compile("|".join(["<image>", *(f"<image {n}>" for n in range(1, 8))]))
"""The placeholders lmms-eval splits an interleaved question at (MMMU's ``<image 1>`` ... ``<image 7>``, which it
turns into ``<image>``)."""
_LONG_BASE64 = re.compile(r"(?:data:[\w/+.-]+;base64,)?[A-Za-z0-9+/]{400,}={0,2}")
BASE64_REMOVED = "[base64 data removed]"


class ImageLabel:
    """What a template sees for one image: renders as a marker that becomes "Image k" + its pixels."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.label = f"Image {index}"

    def __str__(self) -> str:
        return _MARKER.format(self.index)


class ImageLabels(list[ImageLabel]):
    """``image_references``: iterable labels; rendered whole it lists them ("Image 1, Image 2")."""

    def __str__(self) -> str:
        return ", ".join(str(label) for label in self)


def option_list(value: Any) -> list[str] | None:
    """A row's options as a list of texts: a list as is, or text holding a Python or JSON list (MMMU stores
    ``"['a', 'b']"``); ``None`` when it is neither."""
    items: Any = value
    if isinstance(value, str):
        try:
            items = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                items = json.loads(value)
            except ValueError:
                return None
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        return None
    return list(items)


def _options(value: Any) -> list[str]:
    options = option_list(value)
    if options is None:
        raise TemplateError(f"options are not a list of texts: {str(value)[:200]}")
    return options


def _lettered(options: Any, separator: str = "\n") -> str:
    return separator.join(f"{chr(ord('A') + i)}. {option}" for i, option in enumerate(_options(options)))


def _place_images(text: str, images: Any) -> str:
    """``text`` with its placeholders replaced by the row's images (see the module docstring): the k-th image after
    the k-th stretch of text; stretches left over once the images run out are dropped, the last one is kept."""
    stretches = _PLACEHOLDERS.split(str(text))
    out = []
    for index in range(len(images)):
        if index < len(stretches) - 1:
            out.append(stretches[index].strip())
        out.append(_INLINE.format(index + 1))
    return "".join(out) + stretches[-1].strip()


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters.update(options=_options, lettered=_lettered, place_images=_place_images)
    return env


_ENV = _environment()


@lru_cache(maxsize=256)
def compile_template(text: str) -> Template:
    """A compiled sandboxed template (``TemplateError`` on a syntax error)."""
    return _ENV.from_string(text)


def template_variables(text: str) -> set[str]:
    """Variables the template reads (for checking dataset columns before the run)."""
    return set(meta.find_undeclared_variables(_ENV.parse(text)))


def image_variables(count: int) -> dict[str, Any]:
    """The image variables for ``count`` images."""
    labels = ImageLabels(ImageLabel(i + 1) for i in range(count))
    return {"image_reference": labels[0] if labels else "", "image_references": labels}


def scrub_base64(text: str) -> str:
    """Text with long base64 runs (inline images in a dataset column) replaced by a note."""
    return _LONG_BASE64.sub(BASE64_REMOVED, text) if len(text) >= 400 else text


def render_text(template: str, variables: dict[str, Any], image_count: int) -> str:
    """The rendered template with image markers still in place. Raises ``TemplateError``."""
    return compile_template(template).render({**variables, **image_variables(image_count)})


def split_parts(rendered: str, images: list[PreparedImage]) -> list[str | PreparedImage]:
    """Rendered text (with markers) -> ordered parts: text with "Image k" labels, each image after its first label."""
    parts: list[str | PreparedImage] = []
    placed: set[int] = set()
    position = 0
    for match in _MARKER_RE.finditer(rendered):
        index = int(match.group(2))
        label = f"Image {index}" if match.group(1) == "IMG" else ""
        parts.append(scrub_base64(rendered[position : match.start()]) + label)
        if index not in placed and 1 <= index <= len(images):
            placed.add(index)
            parts.append(images[index - 1])
        position = match.end()
    parts.append(scrub_base64(rendered[position:]))
    for index, image in enumerate(images, start=1):
        if index not in placed:
            parts += [f"\n\nImage {index}:\n", image]
    return [p for p in parts if not (isinstance(p, str) and not p)]


def render_parts(template: str, variables: dict[str, Any], images: list[PreparedImage]) -> list[str | PreparedImage]:
    """Render ``template`` with ``variables`` and place ``images``; see the module docstring."""
    return split_parts(render_text(template, variables, len(images)), images)


def parts_text(parts: list[str | PreparedImage]) -> str:
    """The text channel only (what a plan shows; labels stay, pixels are omitted)."""
    return "".join(p if isinstance(p, str) else "" for p in parts)


__all__ = [
    "IMAGE_VARIABLES",
    "TemplateError",
    "compile_template",
    "image_variables",
    "parts_text",
    "render_parts",
    "render_text",
    "scrub_base64",
    "split_parts",
    "template_variables",
]
