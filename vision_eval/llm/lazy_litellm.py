"""litellm, imported only when a call needs it (importing it takes seconds): the lean direct path never does."""

from __future__ import annotations

import os
from typing import Any


def import_litellm() -> Any:
    """litellm, imported lazily and quietly (local cost map, no debug banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm
