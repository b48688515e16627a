"""Make tiktoken and litellm work with no network, before either is imported.

tiktoken looks for its BPE files in ``TIKTOKEN_CACHE_DIR``; litellm ships ``cl100k_base`` and
``o200k_base`` there under hashed names, so we point tiktoken at litellm's copy when the user
has not chosen a directory. litellm fetches a remote price map at import unless told not to.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_done = False


def litellm_tokenizer_dir() -> Path | None:
    """Where litellm keeps its tiktoken BPE files, without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def ensure_offline() -> None:
    """Set the environment so nothing downloads at run time (idempotent)."""
    global _done
    if _done:
        return
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        found = litellm_tokenizer_dir()
        if found is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(found)
    _done = True
