"""Images: references in the dataset frame (``refs``), media detection and safe decoding (``media``),
the preprocessing policy (``policy``), what each provider does with images (``provider_rules``), images
inside chat messages (``chat``) and provider formats (``providers``)."""

from vision_eval.images.chat import extract_chat, looks_like_chat
from vision_eval.images.media import ImageError, decode, detect_media_type, resolve_media_type
from vision_eval.images.policy import PreparedImage, check_call_caps, prepare_image
from vision_eval.images.provider_rules import ProviderRule, estimate_image_tokens, provider_rule
from vision_eval.images.providers import format_message, openai_message
from vision_eval.images.refs import (
    IMAGE_REF,
    IMAGES_DTYPE,
    image_error_expr,
    image_ref,
    image_refs,
    images_series,
    load_bytes,
)

__all__ = [
    "IMAGES_DTYPE",
    "IMAGE_REF",
    "ImageError",
    "PreparedImage",
    "ProviderRule",
    "check_call_caps",
    "decode",
    "detect_media_type",
    "estimate_image_tokens",
    "extract_chat",
    "format_message",
    "image_error_expr",
    "image_ref",
    "image_refs",
    "images_series",
    "load_bytes",
    "looks_like_chat",
    "openai_message",
    "prepare_image",
    "provider_rule",
    "resolve_media_type",
]
