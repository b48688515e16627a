"""Compaction templates: built-in sources, Goose's override lookup, and the one renderer.

Mirrors the crate's ``templates.rs`` plus the goose-side lookup (``prompt_template::template_source``)
that lets a user override a template under ``<goose config dir>/prompts/``.

Every time the workbench touches a template it goes through one sandboxed Jinja environment
(`workbench.compaction._sandbox_env`) in the render process (`workbench.compaction._sandbox`):
rendering (`render`, `render_async`), loading a variant (`check_template` compiles it), and
finding the variables a template reads (`template_variables`). Templates are user files
(exported variants, overrides copied from other machines), so they must not reach Python
internals, and nothing they do may run away: each render and compile is bounded in time,
memory and output size (`RenderLimits`), and a compile also refuses a template nested deeper
than ``max_depth`` levels or longer than ``max_template_chars``. Crossing a limit is a
`TemplateError` naming the template and the limit.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workbench._memo import memo
from workbench.compaction import _sandbox
from workbench.compaction._limits import RenderLimits
from workbench.compaction._sandbox_env import code_fence
from workbench.errors import ConfigError

__all__ = [
    "COMPACTION_SUMMARY_TEMPLATE",
    "COMPACTION_TEMPLATE",
    "RenderLimits",
    "Templates",
    "bake",
    "builtin_template",
    "check_template",
    "code_fence",
    "goose_config_dir",
    "jinja_literal",
    "render",
    "render_async",
    "template_variables",
]

COMPACTION_TEMPLATE = "compaction.md"
"""File name of the prompt that asks the model for the summary (variable: ``messages``)."""
COMPACTION_SUMMARY_TEMPLATE = "compaction_summary.md"
"""File name of the template that renders the parsed summary as markdown."""

_TEMPLATE_NAMES = (COMPACTION_TEMPLATE, COMPACTION_SUMMARY_TEMPLATE)


def builtin_template(name: str) -> str | None:
    """The source of a built-in template shipped in ``workbench/prompts``.

    Args:
        name: A file name such as `COMPACTION_TEMPLATE`.

    Returns:
        The template text, or None when no such built-in exists.
    """
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    resource = importlib.resources.files("workbench").joinpath("prompts").joinpath(name)
    try:
        # Bytes, then decode: read_text would translate newlines, which Rust's include_str! does not.
        return resource.read_bytes().decode("utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def check_template(source: str, name: str = "<template>",
                   limits: RenderLimits | None = None, *, reads: bool = False) -> None:
    """Compile a template in the sandbox under its limits, without rendering it.

    Loading a variant calls this, so a template that cannot be compiled fails once, at load,
    instead of once per cell. The compiled template is kept for the renders that follow, and
    a source that compiled is not sent again while the run lasts (the memo's ``checked``:
    a tune's variants share their sources); a failure is never remembered. With `reads` (a
    prompt template, which a run asks both of before its first render) the same trip also
    answers the variables the source reads and those it only prints whole, kept in the memo's
    ``variables`` as `template_variables` and `_stand_in.printed_whole` keep them; a summary
    template is not asked (a parse of it costs more than a compile of a prompt template).

    Raises:
        TemplateError: a syntax error, nesting past ``max_depth``, a source past
            ``max_template_chars``, or compiling past the time limit.
    """
    key = (source, _limits(limits))
    checked = memo().checked
    known = memo().variables
    if checked.get(key) is None or (reads and known.get(key) is None):
        if not reads:
            _sandbox.call("check", source, None, name, key[1])
        else:  # the run's first render of it then asks for the render alone
            names, whole = _sandbox.call("check and read", source, None, name, key[1])
            known.put(key, names)
            known.put(("printed whole", *key), whole)
        checked.put(key, True)


def template_variables(source: str, name: str = "<template>",
                       limits: RenderLimits | None = None) -> set[str]:
    """The undeclared variables a template reads, found in the sandbox under its limits (once
    per source and limits while the run lasts: the memo's ``variables``).

    Raises:
        TemplateError: the template cannot be parsed within its limits (see `check_template`).
    """
    key = (source, _limits(limits))
    names = memo().variables.get(key)
    if names is None:
        names = memo().variables.put(key, frozenset(
            _sandbox.call("variables", source, None, name, key[1])))
    return set(names)


def render(source: str, context: Mapping[str, object], name: str = "<template>",
           limits: RenderLimits | None = None) -> str:
    """Render a template source in the sandbox and strip the result.

    Synchronous: it waits for the render process (async callers use `render_async`, which
    leaves the event loop free meanwhile).

    Args:
        source: The template text (compiled templates are kept by text).
        context: Template variables.
        name: The template's name, used in error messages.
        limits: Time, memory and size limits; default `RenderLimits.from_env()`.

    Returns:
        The rendered text with surrounding whitespace removed (Goose trims too).

    Raises:
        TemplateError: The template does not compile, fails while rendering, tries to reach
            Python internals, or crosses a render limit (the message names the limit).
    """
    text: str = _sandbox.call("render", source, context, name, _limits(limits))
    return text


async def render_async(source: str, context: Mapping[str, object], name: str = "<template>",
                       limits: RenderLimits | None = None) -> str:
    """`render`, awaited: the event loop runs other work until the render process answers.

    Raises:
        TemplateError: as `render`.
    """
    text: str = await _sandbox.call_async("render", source, context, name, _limits(limits))
    return text


def _limits(limits: RenderLimits | None) -> RenderLimits:
    return limits if limits is not None else RenderLimits.from_env()


def jinja_literal(value: object) -> str:
    """A value as a Jinja (and minijinja) literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(jinja_literal(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def bake(source: str, values: Mapping[str, object], name: str = "<template>") -> str:
    """`source` with a ``{% set %}`` line for each parameter it reads (none: unchanged).

    The workbench renders a parametrised template with its values as render variables (see
    `Templates.params`); baking writes them into the text for a renderer that knows nothing of
    parameters (Goose, after an export). Both render the same text.

    Raises:
        TemplateError: `source` cannot be parsed within the render limits (only when there
            are values to bake: a template without parameters is returned unread).
    """
    if not values:
        return source
    used = template_variables(source, name)
    lines = [f"{{% set {key} = {jinja_literal(v)} %}}\n" for key, v in values.items()
             if key in used]
    return "".join(lines) + source


def goose_config_dir() -> Path:
    """Goose's config directory, resolved the way Goose resolves it.

    ``$GOOSE_PATH_ROOT/config`` when ``GOOSE_PATH_ROOT`` is set to an absolute path; otherwise
    ``$XDG_CONFIG_HOME/goose`` when that is an absolute path, else ``~/.config/goose``
    (``%APPDATA%\\Block\\goose\\config`` on Windows).
    """
    root = os.environ.get("GOOSE_PATH_ROOT")
    if root and Path(root).is_absolute():
        return Path(root) / "config"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", Path.home())) / "Block" / "goose" / "config"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "goose"
    return Path.home() / ".config" / "goose"


def _read_template_file(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read template {path}: {exc}; fix or remove the file to use the built-in"
        ) from exc


def _builtin(name: str) -> str:
    source = builtin_template(name)
    if source is None:  # only when the package data was not installed
        raise ConfigError(f"built-in template {name!r} is missing; reinstall the workbench")
    return source


@dataclass
class Templates:
    """The pair of template sources one compaction uses (the crate's ``Templates``).

    Attributes:
        compaction: Source of the prompt template (`COMPACTION_TEMPLATE`).
        summary: Source of the summary render template (`COMPACTION_SUMMARY_TEMPLATE`).
        name: A label for reports (variant folder name, ``"default"``, ``"goose"``).
        params: Template parameter values (a parametrised variant's point), passed to both
            templates as render variables: every point of a variant shares one compiled
            template per source. `baked` writes them into the text instead (an export).
    """

    compaction: str
    summary: str
    name: str = "default"
    params: dict[str, object] = field(default_factory=dict)

    def baked(self) -> Templates:
        """These templates with `params` written in as ``{% set %}`` lines (see `bake`): what
        an export writes, rendering without any variables beside the templates' own exactly
        what these templates render with `params`. Computed once per instance.

        Raises:
            TemplateError: a source cannot be parsed within the render limits.
        """
        if not self.params:
            return self
        cached = self.__dict__.get("_baked")
        if cached is None or cached[0] != (self.compaction, self.summary, self.params):
            where = f"{self.name}/" if self.name else ""
            done = Templates(bake(self.compaction, self.params, where + COMPACTION_TEMPLATE),
                             bake(self.summary, self.params, where + COMPACTION_SUMMARY_TEMPLATE),
                             self.name)
            cached = ((self.compaction, self.summary, dict(self.params)), done)
            self.__dict__["_baked"] = cached
        return cached[1]

    @classmethod
    def default(cls) -> Templates:
        """The built-in templates."""
        return cls(_builtin(COMPACTION_TEMPLATE), _builtin(COMPACTION_SUMMARY_TEMPLATE))

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str], name: str | None = None) -> Templates:
        """Templates from a variant folder; a file the folder lacks falls back to the built-in.

        Args:
            path: Folder holding ``compaction.md`` and/or ``compaction_summary.md``.
            name: Label; defaults to the folder name.

        Raises:
            ConfigError: The folder does not exist or a file in it cannot be read.
        """
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigError(
                f"template folder {folder} does not exist; pass a folder holding "
                f"{COMPACTION_TEMPLATE} and/or {COMPACTION_SUMMARY_TEMPLATE}"
            )
        sources = []
        for file_name in _TEMPLATE_NAMES:
            candidate = folder / file_name
            sources.append(
                _read_template_file(candidate) if candidate.exists() else _builtin(file_name)
            )
        return cls(sources[0], sources[1], name or folder.name)

    @classmethod
    def goose_overrides(cls) -> Templates:
        """The templates Goose itself would use on this machine.

        ``<goose_config_dir()>/prompts/<name>`` wins when it exists (a read error is a hard
        error, as in Goose); otherwise the built-in is used.

        Raises:
            ConfigError: An override file exists but cannot be read.
        """
        prompts = goose_config_dir() / "prompts"
        sources = []
        for file_name in _TEMPLATE_NAMES:
            candidate = prompts / file_name
            sources.append(
                _read_template_file(candidate) if candidate.exists() else _builtin(file_name)
            )
        return cls(sources[0], sources[1], "goose")

    def content_hash(self) -> str:
        """A tagged digest of both sources (``"sha256:<hex>"``) for cache keys and result rows;
        a parametrised pair is hashed baked, so it digests what it renders."""
        digest = hashlib.sha256()
        baked = self.baked()
        for source in (baked.compaction, baked.summary):
            data = source.encode("utf-8")
            digest.update(f"{len(data)}:".encode())
            digest.update(data)
        return f"sha256:{digest.hexdigest()}"
