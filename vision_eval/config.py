"""Pydantic models of the composed config, and validation that names the bad key and file."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from vision_eval.errors import ConfigError
from vision_eval.secrets import SECRET_ASSIGNMENT as SECRET_ASSIGNMENT  # the one redaction lives in secrets
from vision_eval.secrets import redact as redact
from vision_eval.secrets import redact_override as redact_override


class StrictModel(BaseModel):
    """A settings model that refuses unknown keys."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ImagePolicy(StrictModel):
    """How images are prepared before they are sent to a model. By default an image goes as the dataset holds it
    (its source bytes) at the largest size the model's provider uses, never less: a server of your own (vLLM, Ollama)
    gets the source and its processor decides; a hosted provider gets the size its model works at (OpenAI's sizing
    rule for the model, Anthropic's long-edge and patch limit; Gemini and Nova, which publish none, the source),
    re-encoded only when that size or a limit of the provider's requires it (``vision_eval.images.provider_rules``
    cites each rule)."""

    max_side: int | None = Field(None, ge=1)
    """A cost cap: longest side in pixels. ``None`` (the default): no cap of ours, the image goes at the largest size
    the model's provider uses. A cap smaller than that size shows the model less than the provider would (the dry run
    prices both: ``run.dry_run=true``)."""
    max_pixels: int | None = Field(None, ge=1)
    """A cost cap on width x height; applied together with ``max_side``. ``None``: none."""
    format: Literal["jpeg", "png", "keep"] = "keep"
    """Encoding of the sent image: ``keep`` (the default) sends the source bytes unless the image must change (a
    resize, an EXIF rotation, a GIF's first frame, a format or size the provider refuses), then PNG for PNG and GIF
    sources and JPEG at ``quality`` for the others; ``jpeg`` and ``png`` always re-encode."""
    quality: int = Field(85, ge=1, le=95)
    """JPEG quality (1-95) of a re-encoded image."""
    detail: Literal["auto", "low", "high", "original"] | None = None
    """OpenAI ``detail`` hint for image parts (``original``: GPT-5.4 and later); it also picks the size an OpenAI
    model uses (``low``: 512x512). ``None``: not sent (the model's ``auto``)."""
    max_images_per_call: int = Field(16, ge=1)
    """A call carrying more images is a row error before anything is sent."""
    max_bytes_per_call: int = Field(20_000_000, ge=1)
    """A call whose encoded images exceed this many bytes is a row error before anything is sent."""
    max_source_pixels: int = Field(100_000_000, ge=1)
    """Images of more pixels than this (decompression bombs) are row errors, refused before decoding. The one pixel
    limit: Pillow's own (``PIL.Image.MAX_IMAGE_PIXELS``) is set to it while an image is opened."""
    max_source_bytes: int = Field(50_000_000, ge=1)
    """Image files (and in-memory images) larger than this many bytes are row errors, refused before they are read
    (a photo is a few MB; decoding a 200 MB file costs about a gigabyte)."""
    fast_decode: bool = True
    """A JPEG at least twice the sent size is decoded at a reduced size (libjpeg's DCT scaling to 1/2, 1/4 or 1/8,
    never below the sent size) and downscaled by libvips' Lanczos-3: about 4x less CPU for a 12-megapixel photo
    (about 33 ms instead of 145). The sent size, format and quality are those of a full decode and the bytes
    within about 2%, but the pixels differ slightly (about 47 dB PSNR, less than the JPEG q85 encoding's own
    loss), so the sent sha256 and the call-cache keys differ from a full decode's. ``false``: every image is
    decoded at full size and downscaled by Pillow's LANCZOS (the sent bytes of releases before this default);
    other formats and smaller JPEGs are prepared that way either way."""


class JudgeConfig(StrictModel):
    """The model that grades outputs (any litellm model id)."""

    model: str | None = None
    """litellm model id, e.g. ``openai/gpt-4o-mini``; ``None`` means no judge (judge evaluators are skipped)."""
    api_base: str | None = None
    """Base URL of the provider or of an OpenAI-compatible server (vLLM, Ollama, a proxy)."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key. It must be set before a run starts (checked
    before any call); ``null`` for servers that need no key (local vLLM, Ollama)."""
    api_key: SecretStr | None = None
    """The API key itself (from Python); redacted in every saved file."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature."""
    max_tokens: int | None = Field(1024, ge=1)
    """Cap on the reply length."""
    timeout_s: float = Field(60.0, gt=0)
    """Per-call timeout in seconds."""
    max_reply_bytes: int = Field(8_000_000, ge=1024)
    """Largest reply body read, in bytes once decoded (a gzip body can inflate a thousandfold); a larger reply is
    that row's ``error``, read no further. Judge replies are a few KB (with logprobs, up to about 1 MB)."""
    max_retries: int = Field(4, ge=0)
    """Retries after the first attempt on 429, 5xx, timeouts and connection resets."""
    max_retry_after_s: float = Field(120.0, ge=0)
    """Longest ``Retry-After`` honoured; a provider asking to wait longer fails the call at once (the row is
    an ``error`` saying so) instead of parking it."""
    circuit_breaker: int | None = Field(20, ge=1)
    """After this many consecutive calls fail without hope of a retry (401/403/404, bad request, unknown
    model, connection refused after retries), stop calling the model: its remaining rows are ``error`` rows
    "not attempted" and the run exits 3. ``null`` never stops."""
    max_concurrency: int = Field(16, ge=1)
    """Concurrent calls to this model."""
    rpm: int | None = Field(None, ge=1)
    """Requests-per-minute limit."""
    tpm: int | None = Field(None, ge=1)
    """Tokens-per-minute limit."""
    cache: bool = True
    """Reuse identical earlier calls from the persistent cache."""
    cache_dir: str | None = None
    """Cache location: a folder (default ``~/.cache/vision_eval``) or a Redis server that a cluster's jobs share,
    ``redis://host:6379/0`` (``pip install "vision-eval[redis]"``)."""
    cache_mode: Literal["auto", "wal", "rollback"] = "auto"
    """How a cache folder's SQLite file is shared: ``auto`` uses WAL on a local disk and SQLite's rollback journal
    on a network filesystem (NFS, Lustre, GPFS, CIFS...), where WAL cannot work; ``rollback`` for a network
    filesystem that ``auto`` does not recognise."""
    cache_wait_s: float = Field(600.0, gt=0)
    """How long a call waits for an identical call that another process is sending (a job of the same sweep)
    before it sends the call itself. A claimer that dies is replaced sooner (its lease lapses)."""
    image: ImagePolicy = ImagePolicy()
    """Image preprocessing policy."""
    params: dict[str, Any] = {}
    """Extra litellm completion parameters (e.g. ``top_p``)."""
    transport: Literal["auto", "litellm", "direct"] = "auto"
    """``auto``: a lean direct HTTP path for ``openai/`` and ``hosted_vllm/`` models, litellm for the rest;
    ``litellm`` forces litellm; ``direct`` forces the OpenAI-compatible path."""
    batch: bool = False
    """Send this model's calls through its provider's batch API instead of live calls: OpenAI Batch, Anthropic
    Message Batches or Gemini batch mode (``openai/``, ``anthropic/``, ``gemini/`` models), usually half the
    price, results within hours (the providers promise 24 h). Requests are collected into jobs of
    ``batch_size``; the run waits for its jobs, and a killed run resumes polling them (never resubmitting).
    Other providers fall back to live calls with a warning."""
    batch_size: int = Field(1000, ge=1)
    """Most requests per batch job; a job also stays within its provider's limits (OpenAI 50,000 requests /
    200 MB, Anthropic 100,000 / 256 MB, Gemini 20 MB of inline requests). A smaller job is sent once no new
    request has arrived for a few seconds."""
    batch_poll_s: float = Field(30.0, gt=0)
    """Seconds between two status checks of a running batch job."""
    batch_max_wait_h: float = Field(24.0, gt=0)
    """Hours a batch job may run before it is cancelled: its finished requests are kept (and paid), the rest
    are ``error`` rows saying the job did not finish in time."""

    @property
    def enabled(self) -> bool:
        """True when a model is configured."""
        return self.model is not None


DEFAULT_CANDIDATE_PROMPT = "{{ input }}"
"""The request when neither the candidate nor the dataset sets a prompt."""


class CandidateImagePolicy(ImagePolicy):
    """A candidate's image policy: the judges', except that an image it must re-encode is written at JPEG q95 (a
    model under test should see the dataset's image as nearly as it can)."""

    quality: int = Field(95, ge=1, le=95)
    """JPEG quality (1-95) of a re-encoded image."""


class CandidateConfig(JudgeConfig):
    """The model under test: call settings as for a judge, plus its prompt."""

    image: CandidateImagePolicy = CandidateImagePolicy()
    """How its images are prepared: by default the image as the dataset holds it, at the largest size the model's
    provider uses (the source bytes for a server of your own, e.g. vLLM), as lmms-eval hands the model the dataset's
    image; a re-encoded image (a resize for a hosted provider, an EXIF rotation) is JPEG q95 or PNG. Set
    ``max_side`` only to cap the cost: a model under test then sees less than it would in the reference harness."""

    prompt: str | None = None
    """Jinja2 template of the request (same variables as judge prompts; images not placed by
    ``{{ image_reference }}`` are appended after the text). ``None``: the dataset's ``prompt`` (a benchmark
    preset asks as its reference harness does), else ``{{ input }}``."""
    system: str | None = None
    """Optional system message."""
    images: list[str] = ["images"]
    """Columns whose images are sent, in order."""
    name: str | None = None
    """Label for leaderboards (default: the model id)."""


class DatasetConfig(StrictModel):
    """Where the samples come from and how their columns map to the canonical ones."""

    source: Literal["auto", "hf", "parquet", "jsonl", "json", "csv", "imagefolder", "disk"] = "auto"
    """Kind of source; ``auto`` infers it from ``path``."""
    path: str | None = None
    """A local file or folder, or a Hugging Face dataset id."""
    name: str | None = None
    """HF dataset configuration name."""
    split: str | None = None
    """HF split (default: the first split, ``train`` for local files)."""
    revision: str | None = None
    """HF revision (commit, tag or branch)."""
    streaming: bool = False
    """Stream an HF dataset instead of downloading it whole (use with ``limit``)."""
    data_files: Any = None
    """HF ``data_files`` argument for builder datasets (``imagefolder``, ``json``...)."""
    columns: dict[str, str] = {}
    """Source column -> canonical column (``id``, ``input``, ``output``, ``expected_output``, ``images``...)."""
    images_from: list[str] = []
    """Source columns gathered, in this order, into the canonical ``images`` list (empty cells left out), for a
    dataset that keeps each image in a column of its own (MMMU's ``image_1`` ... ``image_7``)."""
    image_root: str | None = None
    """Folder relative image paths resolve against (the dataset root); default: the dataset file's folder, or
    for rows from Python the working directory. Relative paths must stay inside it after symlinks are resolved."""
    image_roots: list[str] = []
    """Folders, besides the dataset root, that absolute image paths and ``file://`` URIs may point into (checked
    after symlinks are resolved, before anything is opened). Default: none, so only the dataset root (for hub
    datasets: nothing)."""
    allow_urls: bool = False
    """Allow http(s) image URLs (fetched only when an evaluator needs the pixels)."""
    required_columns: list[str] = []
    """Columns that must exist after mapping, besides those the evaluators need."""
    limit: int | None = Field(None, ge=0)
    """Keep at most this many rows (after ``sample``)."""
    sample: int | None = Field(None, ge=0)
    """Draw this many rows at random (seeded by ``seed``)."""
    seed: int = 0
    """Seed for ``sample``."""
    shard: str | None = None
    """``i/n``: keep the i-th of n shards (0-based): the i-th of n consecutive parts of the selected rows."""
    description: str = ""
    """Free text (hub id and split of a preset, licence...)."""
    prompt: str | None = None
    """How a model under test is asked about a row, as the benchmark's reference harness asks (Jinja2 over the
    row's variables, e.g. ``"{{ input }}\nAnswer the question using a single word or phrase."``); used when the
    candidate sets no ``prompt`` of its own."""

    @field_validator("shard")
    @classmethod
    def _check_shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)
        return value


class RunConfig(StrictModel):
    """How the run executes."""

    output_dir: str | None = None
    """Where results go (Hydra's run dir on the command line). A directory that already holds a run is never
    reused: the run writes to ``<dir>-2`` (``-3``...) instead; use ``resume`` to continue a run."""
    limit: int | None = Field(None, ge=0)
    """Evaluate at most this many rows."""
    seed: int = 0
    """Seed for anything random in evaluators."""
    concurrency: int = Field(16, ge=1)
    """Model calls in flight across the whole run."""
    shard: str | None = None
    """``i/n``: evaluate the i-th of n deterministic shards of the dataset."""
    batch_size: int = Field(50_000, ge=1)
    """Rows per batch handed to an evaluator."""
    workers: int | None = Field(None, ge=1)
    """Processes that per-row rules (code validators, field_accuracy, bbox_iou) spread a large batch over:
    ``None`` uses the machine's cores, 1 scores everything in the run's own process."""
    progress: bool | None = None
    """Report progress: ``None`` shows a live bar on a terminal and plain lines every
    ``progress_interval_s`` otherwise (CI, SLURM logs, nohup); ``true`` the same; ``false`` nothing."""
    progress_interval_s: float = Field(30.0, gt=0)
    """Seconds between plain progress lines when stderr is not a terminal."""
    write_report: bool = True
    """Also write ``report.html`` when a report writer is available."""
    checkpoint: bool = True
    """Save finished work under ``<output_dir>/checkpoint`` so an interrupted run can resume (removed when
    the run completes)."""
    resume: str | None = None
    """A run directory to resume: finished batches and finished model calls are reused, results are written
    there. It must hold the checkpoint of a run with the same dataset, evaluators, judge and candidate."""
    resume_damaged: bool = False
    """Resume a checkpoint some of whose files are damaged (a resume checks every file first and otherwise stops,
    exit 2, naming them): the damaged files are set aside, the batches they held are evaluated again, finished
    calls the journal still holds are not sent again, and each finished call it lost that is sent again is
    counted (console, run.json ``scheduler.resent``)."""
    max_error_rate: float = Field(0.1, ge=0, le=1)
    """Default of every evaluator's ``max_error_rate`` gate: a larger share of ``error`` rows among the rows
    an evaluator applies to makes the run exit 3."""
    allow_nothing_scored: bool = False
    """A run in which no evaluator scored a single row (every row ``skipped``, or no rows) exits 3,
    "nothing was scored", with the most common reason rows were skipped; ``true`` is for configs that mean it
    (a stack of judges run with ``judge=none`` to see their plan, a ``where`` that may select nothing)."""
    junit: str | None = None
    """Write JUnit XML here (one testsuite per evaluator, one testcase per sample) for CI systems; a relative
    path is relative to the run directory."""
    dry_run: bool = False
    """Load the data and build every request, print the planned calls, tokens and estimated dollars per
    evaluator and model, then stop: nothing is sent and nothing is written."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Budget for the run's model calls: no call starts whose estimated cost would take spent plus in-flight
    past it; the rows left are ``skipped`` ("budget exhausted") and the run exits 3. A resume with a larger
    budget continues and never pays twice for a finished call."""
    preflight: bool = False
    """Before any row is evaluated, send one tiny request to every configured judge and candidate model (through
    the cache) so a wrong key, URL or model fails the run at once (exit 2). On by default for ``vision-eval``
    (``conf/config.yaml``); off by default for ``evaluate()`` from Python. Keys are always checked."""

    @field_validator("shard")
    @classmethod
    def _check_shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)
        return value


class AppConfig(StrictModel):
    """The whole composed config."""

    dataset: DatasetConfig
    """The dataset."""
    evaluators: dict[str, dict[str, Any]] = {}
    """Evaluator name -> settings (each with ``type`` or ``_target_``)."""
    judge: JudgeConfig = JudgeConfig()
    """The default judge for model-graded evaluators."""
    run: RunConfig = RunConfig()
    """Run settings."""
    candidate: CandidateConfig = CandidateConfig()
    """The model under test; when set, it produces ``output`` for every row before evaluation."""

    @model_validator(mode="after")
    def _candidate_prompt(self) -> AppConfig:
        # A candidate without a prompt of its own asks as the dataset says (run.json then shows what was sent).
        if self.candidate.prompt is None:
            self.candidate.prompt = self.dataset.prompt or DEFAULT_CANDIDATE_PROMPT
        return self


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``."""
    try:
        index_text, count_text = str(text).split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"shard must look like 'i/n' (e.g. '0/4'), got {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"shard {text!r}: need 0 <= i < n")
    return index, count


def shard_range(rows: int, index: int, every: int) -> tuple[int, int]:
    """The positions ``[start, stop)`` of shard ``index/every`` of ``rows`` rows: consecutive rows, the shards in
    order, their sizes differing by at most one (so a shard reads only its part of a source)."""
    return index * rows // every, (index + 1) * rows // every


@dataclass
class ConfigSources:
    """Which file each part of the composed config came from (for error messages)."""

    files: dict[str, str] = field(default_factory=dict)
    """Top-level key (``dataset``, ``evaluators``, ``judge``, ``run``) -> file path."""
    overrides: list[str] = field(default_factory=list)
    """Command-line overrides, as typed."""

    def file_for(self, key: str) -> str | None:
        """The file (or command line) a dotted key most likely came from."""
        for override in self.overrides:
            name = override.lstrip("+~").split("=", 1)[0]
            if name in self.files:  # a group choice (evaluators=mine) picks a file; it sets no value
                continue
            if name == key or key.startswith(name + "."):  # quoted without the ``++`` vision-eval may have added
                return f"command-line override '{override.removeprefix('++')}'"
        top = key.split(".", 1)[0]
        return self.files.get(top)


def dotted(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a dotted key (``evaluators.count.threshold``)."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _step(annotation: Any, part: Any) -> Any:
    """The annotation one location step below ``annotation`` (a field, a list item, a mapping value)."""
    model = _model_in(annotation)
    if model is not None and isinstance(part, str) and part in model.model_fields:
        return model.model_fields[part].annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        named = [arg for arg in args if getattr(_model_in(arg), "__name__", None) == part]
        if named:  # pydantic names the union member that failed in the location
            return named[0]
        steps = [_step(arg, part) for arg in args]
        return next((s for s in steps if s is not None), None)
    if origin in (list, tuple) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def valid_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the model accepts at error location ``loc`` (the unknown key last); empty when unknown."""
    annotation: Any = model
    for part in loc[:-1]:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    found = _model_in(annotation)
    return list(found.model_fields) if found is not None else []


def unknown_key_message(key: str, valid: list[str]) -> str:
    """``unknown key``, with the closest valid names and the list of valid keys."""
    if not valid:
        return "unknown key"
    close = difflib.get_close_matches(key, valid, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown key{hint} (valid keys: {', '.join(valid)})"


def config_error_from(
    error: ValidationError,
    prefix: str = "",
    sources: ConfigSources | None = None,
    model: type[BaseModel] | None = None,
) -> ConfigError:
    """One ``ConfigError`` listing every problem pydantic found, keyed by the first; an unknown key of
    ``model`` (the validated model) comes with the closest valid names and the list of valid keys."""
    problems = []
    for item in error.errors():
        key = dotted(tuple(p for p in (prefix, *item["loc"]) if p != ""))
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            loc = tuple(item["loc"])
            valid = valid_keys(model, loc) if model is not None and loc else []
            message = unknown_key_message(str(loc[-1]) if loc else "", valid)
        problems.append((key, message))
    first_key, first_message = problems[0]
    file = sources.file_for(first_key) if sources else None
    if len(problems) > 1:
        first_message += "; also " + "; ".join(f"{k}: {m}" for k, m in problems[1:])
    return ConfigError(first_key, first_message, file)


def validate_config(raw: Mapping[str, Any], sources: ConfigSources | None = None) -> AppConfig:
    """Validate a plain mapping (the composed Hydra config) into an ``AppConfig``."""
    try:
        return AppConfig.model_validate(dict(raw))
    except ValidationError as exc:
        raise config_error_from(exc, sources=sources, model=AppConfig) from None
