"""Images: references in the dataset frame (refs), and later decoding, policy and provider formats."""

from vision_eval.images.refs import (
    IMAGE_REF,
    IMAGES_DTYPE,
    image_error_expr,
    image_ref,
    image_refs,
    images_series,
    load_bytes,
)

__all__ = ["IMAGES_DTYPE", "IMAGE_REF", "image_error_expr", "image_ref", "image_refs", "images_series", "load_bytes"]
