"""What each provider does with the images it receives: the largest size its model uses, the formats and sizes it
accepts, and what an image costs in prompt tokens.

An image goes to a model at the largest size the model's provider uses, never less (a cost cap of the user's,
``image.max_side`` / ``image.max_pixels``, comes on top), and as the dataset holds it (its source bytes) unless the
provider's rule shrinks it or a limit of the provider's refuses it as it is:

- **An OpenAI-compatible server of your own** (vLLM, Ollama, LM Studio, TGI: an ``api_base`` that is not the
  provider's, or a ``hosted_vllm/``, ``ollama/``, ``lm_studio/`` model): the source bytes. The model's own processor
  decides the size, as it does under lmms-eval, which hands the model the dataset's image.
- **OpenAI** (https://developers.openai.com/api/docs/guides/images-vision, "Model sizing behavior" and "Calculating
  costs"): per model family. Tile models (GPT-4o, GPT-4o mini, GPT-4.1, GPT-4.5, GPT-5, o1, o3): scaled to fit
  2048x2048, then to a shortest side of 768. Patch models: at most 1,536 patches of 32 px and 2048 px (gpt-5-mini,
  gpt-5-nano, gpt-5.2, gpt-5.4-mini/nano, o4-mini, gpt-4.1-mini/nano...), 2,500 patches and 2048 px (gpt-5.4 by
  default, gpt-5.5 at ``detail: high``), 10,000 patches and 6000 px (gpt-5.5 by default, ``detail: original`` on
  gpt-5.4/5.5); GPT-5.6 keeps the input size. ``detail: low`` is a 512x512 version. Every image stays within the
  API's 30,000 patches (larger ones are refused, not resized). Other models: the source (never less).
- **Anthropic** (https://platform.claude.com/docs/en/build-with-claude/vision, "Evaluate image size" and "How Claude
  resizes and pads images"): the largest aspect-preserving size whose sides, padded to 28 px, stay within 1568 px
  and whose 28-px patches number at most 1568 (Claude Opus 4.7 and later: 2576 px and 4784 patches); at most 10 MB
  of base64 per image on the Claude API, 5 MB on Bedrock and Vertex AI; 32 MB per request.
- **Gemini** (https://ai.google.dev/gemini-api/docs/image-understanding and /docs/media-resolution;
  https://firebase.google.com/docs/ai-logic/input-file-requirements): no published pixel limit (Gemini 2 tiles the
  whole image at 768 px, Gemini 3 budgets tokens per image with ``media_resolution``), so the source; PNG, JPEG,
  WEBP, HEIC, HEIF; 20 MB per request inline (7 MB per image on Vertex AI).
- **Amazon Nova** (https://docs.aws.amazon.com/nova/latest/userguide/modalities-image.html): rescales every image
  itself, up or down, to its nearest aspect ratio; at most 8000x8000 px and 25 MB per request (base64 included).

Limits are in bytes of the encoded image before base64 (a base64 limit is three quarters of it in raw bytes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Size = tuple[int, int]
Fit = Callable[[int, int], Size]

BASE64 = 3 / 4
"""Raw bytes per byte of base64."""
MB = 1_000_000


def _as_is(width: int, height: int) -> Size:
    return width, height


def _scaled(width: int, height: int, scale: float) -> Size:
    if scale >= 1.0:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))


@dataclass(frozen=True)
class EdgeLimit:
    """Fit within ``edge`` px on the longest side (a box of ``edge`` x ``edge``)."""

    edge: int

    def __call__(self, width: int, height: int) -> Size:
        return _scaled(width, height, self.edge / max(width, height))


@dataclass(frozen=True)
class OpenAITiles:
    """OpenAI's tile models at high detail: fit 2048x2048, then scale the shortest side down to 768."""

    def __call__(self, width: int, height: int) -> Size:
        width, height = _scaled(width, height, 2048 / max(width, height))
        return _scaled(width, height, 768 / min(width, height))


def patches(width: int, height: int, patch: int) -> int:
    """Patches of ``patch`` px needed to cover a ``width`` x ``height`` image."""
    return math.ceil(width / patch) * math.ceil(height / patch)


@dataclass(frozen=True)
class PatchBudget:
    """OpenAI's patch models: at most ``budget`` patches of 32 px and ``edge`` px on the longest side (``edge``
    ``None``: no pixel limit). Over the budget, the published rule scales by sqrt(32² x budget / area), trimmed so
    that whole patches fit; a pixel of rounding more is taken off when the count still exceeds the budget."""

    budget: int
    edge: int | None = None

    def __call__(self, width: int, height: int) -> Size:
        scale = 1.0 if self.edge is None else self.edge / max(width, height)
        if patches(width, height, 32) > self.budget:
            shrink = math.sqrt(32 * 32 * self.budget / (width * height))
            trim = min(math.floor(side * shrink / 32) / (side * shrink / 32) for side in (width, height))
            scale = min(scale, shrink * trim)
        w, h = _scaled(width, height, scale)
        while patches(w, h, 32) > self.budget and max(w, h) > 1:
            w, h = _scaled(width, height, (max(w, h) - 1) / max(width, height))
        return w, h


@dataclass(frozen=True)
class ClaudePatches:
    """Anthropic: the largest aspect-preserving size whose sides, padded up to a multiple of 28 px, stay within
    ``edge`` and whose 28-px patches number at most ``budget``."""

    edge: int
    budget: int

    def fits(self, width: int, height: int) -> bool:
        """True when the image goes to the model at this size."""
        padded = max(math.ceil(width / 28), math.ceil(height / 28)) * 28
        return padded <= self.edge and patches(width, height, 28) <= self.budget

    def __call__(self, width: int, height: int) -> Size:
        if self.fits(width, height):
            return width, height
        long, short = max(width, height), min(width, height)
        # an upper bound on the long side: the edge limit, and the area the patch budget can cover at most
        side = min(long, self.edge, math.floor(math.sqrt(28 * 28 * self.budget * long / short)) + 1)
        while side > 1:
            other = max(1, round(side * short / long))
            size = (side, other) if width >= height else (other, side)
            if self.fits(*size):
                return size
            side -= 1
        return (1, 1)


@dataclass(frozen=True)
class Both:
    """The smaller of two fits (a model's rule within an API's hard limit)."""

    first: Fit
    second: Fit

    def __call__(self, width: int, height: int) -> Size:
        return self.second(*self.first(width, height))


@dataclass(frozen=True)
class TileTokens:
    """Tokens of OpenAI's tile models: ``base`` + ``tile`` per 512-px tile (``tile`` 0: ``base`` for any image)."""

    base: int
    tile: int = 0

    def __call__(self, width: int, height: int) -> int:
        return self.base + self.tile * math.ceil(width / 512) * math.ceil(height / 512)


@dataclass(frozen=True)
class PatchTokens:
    """Tokens of a patch model: ``multiplier`` per patch of ``patch`` px."""

    patch: int = 32
    multiplier: float = 1.0

    def __call__(self, width: int, height: int) -> int:
        return math.ceil(patches(width, height, self.patch) * self.multiplier)


def _gemini_tokens(width: int, height: int) -> int:
    """Gemini 2: 258 for an image within 384x384, else 258 per 768-px tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def _nova_tokens(width: int, height: int) -> int:
    """Nova's guide: about 1,300 tokens per 900x900 px."""
    return 1300 * math.ceil(width * height / 810_000)


@dataclass(frozen=True)
class ProviderRule:
    """How one provider's model treats the images it receives."""

    name: str
    """What sized the image, recorded with it (``openai tiles``, ``anthropic 1568px/1568``, ``server``...)."""
    fit: Fit = _as_is
    """The size the model uses an image of a given size at (never larger than the image)."""
    media_types: frozenset[str] | None = None
    """Formats the provider accepts; ``None``: whatever the decoder reads (a server's own processor)."""
    max_image_bytes: int | None = None
    """Largest encoded image the provider accepts, in bytes before base64."""
    max_request_bytes: int | None = None
    """Largest total of encoded images in one request, in bytes before base64."""
    tokens: Callable[[int, int], int] = field(default=PatchTokens(), compare=False, repr=False)
    """Prompt tokens an image of the sent size costs (a server's: one per 32-px patch, a rough guess)."""

    def key(self) -> str:
        """What decides an image's preparation under this rule, as a string (part of the prepared-image key)."""
        return repr((self.name, self.fit, sorted(self.media_types or ()), self.max_image_bytes))

    def sent_tokens(self, width: int, height: int) -> int:
        """Prompt tokens of an image of this size, once the provider has sized it."""
        return self.tokens(*self.fit(width, height))


SERVER = ProviderRule("server: the source bytes")
"""An OpenAI-compatible server of your own: the model's processor decides."""
_OPENAI_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
_OPENAI_MAX = PatchBudget(30_000)
_SERVER_PREFIXES = ("hosted_vllm/", "ollama/", "ollama_chat/", "lm_studio/", "openai_like/", "huggingface/", "tgi/")
_OWN_HOSTS = ("api.openai.com", "openai.azure.com", "anthropic.com", "googleapis.com", "amazonaws.com")

# (model-name pattern, tile base tokens, tile tokens) of OpenAI's tile models, most specific first
_OPENAI_TILES = (
    (r"gpt-4o-mini", 2833, 5667),
    (r"gpt-5(?:-chat-latest|-\d{4}-\d\d-\d\d)?$", 70, 140),
    (r"o1|o3", 75, 150),
    (r"computer-use-preview", 65, 129),
    (r"gpt-4o|gpt-4\.1(?:-\d{4}-\d\d-\d\d)?$|gpt-4\.5|gpt-4-turbo|gpt-4-vision", 85, 170),
)
# (pattern, patch budget, edge, token multiplier) of OpenAI's patch models at their default detail
_OPENAI_PATCHES = (
    (r"gpt-5\.4-mini|gpt-5-mini|gpt-4\.1-mini", 1536, 2048, 1.62),
    (r"gpt-5\.4-nano|gpt-5-nano|gpt-4\.1-nano", 1536, 2048, 2.46),
    (r"o4-mini", 1536, 2048, 1.72),
    (r"gpt-5\.2|gpt-5\.3-codex|gpt-5-codex-mini|gpt-5\.1-codex-mini", 1536, 2048, 1.0),
    (r"gpt-5\.5", 10_000, 6000, 1.0),
    (r"gpt-5\.4", 2_500, 2048, 1.0),
)


def _openai(name: str, detail: str | None) -> ProviderRule:
    if detail == "low":
        return ProviderRule("openai low detail 512px", EdgeLimit(512), _OPENAI_TYPES, tokens=TileTokens(85))
    for pattern, base, tile in _OPENAI_TILES:
        if re.match(pattern, name):
            return ProviderRule(
                "openai tiles 2048/768",
                Both(OpenAITiles(), _OPENAI_MAX),
                _OPENAI_TYPES,
                tokens=TileTokens(base, tile),
            )
    for pattern, budget, edge, multiplier in _OPENAI_PATCHES:
        if re.match(pattern, name):
            if detail == "original" and budget == 2_500:  # gpt-5.4: original allows what gpt-5.5 uses by default
                budget, edge = 10_000, 6000
            elif detail == "high" and budget == 10_000:  # gpt-5.5: high is the smaller budget
                budget, edge = 2_500, 2048
            return ProviderRule(
                f"openai patches {budget}/{edge}px",
                PatchBudget(budget, edge),
                _OPENAI_TYPES,
                tokens=PatchTokens(32, multiplier),
            )
    # GPT-5.6 (keeps the input size) and models the table does not know: the source, within the API's limit
    return ProviderRule("openai: the source (30,000 patches at most)", _OPENAI_MAX, _OPENAI_TYPES)


def claude_version(name: str) -> tuple[int, int] | None:
    """(major, minor) of a Claude model id: ``claude-3-5-sonnet-...`` -> (3, 5), ``claude-opus-4-7`` -> (4, 7),
    ``claude-opus-4-20250514`` -> (4, 0); ``None`` when the id carries no version."""
    found = re.search(r"claude-(?:(\d+)(?:-(\d)(?!\d))?-[a-z]|[a-z]+-(\d+)(?:-(\d)(?!\d))?)", name)
    if found is None:
        return None
    major, minor = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
    return int(major), int(minor or 0)


def _anthropic(name: str, hosted_by_cloud: bool) -> ProviderRule:
    version = claude_version(name)
    if version is None or version >= (4, 7):  # Claude Opus 4.7 and later (or unknown: never less) see more
        edge, budget = 2576, 4784
    else:
        edge, budget = 1568, 1568
    per_image = (5 if hosted_by_cloud else 10) * MB * BASE64
    return ProviderRule(
        f"anthropic {edge}px/{budget} patches",
        ClaudePatches(edge, budget),
        frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}),
        max_image_bytes=int(per_image),
        max_request_bytes=int(32 * MB * BASE64),
        tokens=PatchTokens(28),
    )


def _gemini(on_vertex: bool) -> ProviderRule:
    return ProviderRule(
        "gemini: the source",
        _as_is,
        frozenset({"image/png", "image/jpeg", "image/webp"}),  # and HEIC/HEIF, which we never read
        max_image_bytes=7 * MB if on_vertex else None,
        max_request_bytes=None if on_vertex else int(20 * MB * BASE64),
        tokens=_gemini_tokens,
    )


NOVA = ProviderRule(
    "nova: the source (8000px at most)",
    EdgeLimit(8000),
    frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    max_request_bytes=int(25 * MB * BASE64),
    tokens=_nova_tokens,
)


def _gpt_4o_tokens(width: int, height: int) -> int:
    return TileTokens(85, 170)(*OpenAITiles()(width, height))


NO_MODEL = ProviderRule("no model: the source", tokens=_gpt_4o_tokens)
"""No model configured (a plan of what a judge would be sent): the source, priced as GPT-4o would price it."""


def is_own_server(model: str | None, api_base: str | None) -> bool:
    """True for an OpenAI-compatible server of the user's own: a server model prefix, or an ``openai/`` (or
    unprefixed) model at an ``api_base`` that is not a hosted provider's."""
    name = (model or "").lower()
    if name.startswith(_SERVER_PREFIXES):
        return True
    own = bool(api_base) and not any(host in (api_base or "").lower() for host in _OWN_HOSTS)
    return own and (name.startswith("openai/") or "/" not in name)


def provider_rule(model: str | None, api_base: str | None = None, detail: str | None = None) -> ProviderRule:
    """The rule for a litellm model id (``openai/gpt-4o``, ``anthropic/claude-...``, ``gemini/...``,
    ``bedrock/...nova...``, ``hosted_vllm/...``) served at ``api_base`` with the ``detail`` hint."""
    if not model:
        return NO_MODEL
    name = model.lower()
    if is_own_server(model, api_base):
        return SERVER
    bare = name.rsplit("/", 1)[-1]
    if "claude" in name:
        return _anthropic(bare, name.startswith(("bedrock/", "vertex_ai/")))
    if "gemini" in name:
        return _gemini(name.startswith("vertex_ai/"))
    if "nova" in name:
        return NOVA
    if name.startswith(("openai/", "azure/", "text-completion-openai/")) or "/" not in name:
        return _openai(bare, detail)
    return ProviderRule("unknown provider: the source")  # a litellm provider whose rule is not published here


def rule_for(config: Any) -> ProviderRule:
    """The rule for a judge or candidate config (its ``model``, ``api_base`` and ``image.detail``)."""
    return provider_rule(config.model, config.api_base, config.image.detail)


def estimate_image_tokens(
    width: int, height: int, model: str | None = None, detail: str | None = None, api_base: str | None = None
) -> int:
    """Prompt tokens an image of this size costs at the model's provider (GPT-4o's rule when no model is named)."""
    return provider_rule(model or "gpt-4o", api_base, detail).sent_tokens(width, height)


def openai_image_tokens(width: int, height: int, detail: str | None = "auto") -> int:
    """GPT-4o's published image tokens: 85 base + 170 per 512-px tile, after its 2048/768 scaling."""
    return estimate_image_tokens(width, height, "gpt-4o", detail)
