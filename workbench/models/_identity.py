"""How wrappers name the model they wrap: labels for tables and identities for cache keys.

A model's *identity* is everything that changes its answer (model id, base URL, generation
parameters). Wrappers read it from ``cache_identity()`` when the model offers one; secrets and
transport settings are stripped here, defensively, whatever the model returned.
"""

from __future__ import annotations

# Never part of a cache key: credentials, and settings that change how long we wait, not the answer.
SECRET_OR_TRANSPORT_KEYS = frozenset(
    {"api_key", "timeout", "retry", "num_retries", "max_retries", "authorization", "password",
     "secret", "client_secret", "access_token"}
)


def format_window(window: int) -> str:
    """``8192`` -> ``"8k"``, ``32000`` -> ``"32000"`` (k means 1024, as in model strings)."""
    if window % 1024 == 0:
        return f"{window // 1024}k"
    return str(window)


def strip_secrets(value: object) -> object:
    """A copy of `value` with secret and transport keys removed at every depth.

    Keys are matched case-insensitively, and any key ending in ``api_key`` counts as secret.
    """
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = str(key).lower()
            if name in SECRET_OR_TRANSPORT_KEYS or name.endswith("api_key"):
                continue
            out[key] = strip_secrets(item)
        return out
    if isinstance(value, (list, tuple)):
        return [strip_secrets(item) for item in value]
    return value


def model_name(model: object) -> str:
    """The model id a wrapper reports in errors (``openai/gpt-4o-mini``, ``extractive``...)."""
    for attr in ("model_name", "model", "name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    inner = getattr(model, "inner", None)
    if inner is not None and inner is not model:
        return model_name(inner)
    return type(model).__name__


def model_label(model: object) -> str:
    """A short label for tables: the model's ``describe()`` when it has one, else its id."""
    describe = getattr(model, "describe", None)
    if callable(describe):
        return str(describe())
    return model_name(model)


def model_identity(model: object) -> object:
    """What identifies `model`'s answers, secrets stripped.

    Uses ``model.cache_identity()`` when present. Otherwise the class and model id: a ``repr``
    carrying a memory address would change the cache key on every run, so it is never used.
    """
    identity_fn = getattr(model, "cache_identity", None)
    if callable(identity_fn):
        return strip_secrets(identity_fn())
    cls = type(model)
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "model": model_name(model)}
