"""``image_similarity``: a generated image against a reference image, deterministically."""
