"""``workbench sessions generate``: write generated sessions with planted facts (attached by ``_sessions``)."""

from __future__ import annotations

from pathlib import Path

import click


def _sizes(values: tuple[str, ...]) -> list[int]:
    sizes: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip().lower()
            if not part:
                continue
            scale = 1000 if part.endswith("k") else 1
            try:
                sizes.append(int(float(part.rstrip("k")) * scale))
            except ValueError as exc:
                raise click.BadParameter(f"{part!r} is not a token count (e.g. 5000 or 5k)",
                                         param_hint="--tokens") from exc
    return sizes


@click.command("generate")
@click.option("--seed", "seeds", type=int, multiple=True,
              help="Seed (repeatable); with --tokens, seeds pair with sizes in order.")
@click.option("--tokens", "tokens", multiple=True,
              help="Target size in o200k tokens; repeatable or comma-separated (5k,12k).")
@click.option("--shape", default="debugging", show_default=True,
              help="Session shape (generator version 3): debugging, feature, refactor, review, "
                   "tool-loop or discussion.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Folder for the JSON files [default: datasets, or "
                                 "datasets/memory with --memory].")
@click.option("--memory", is_flag=True,
              help="Regenerate the memory set instead (generator version 4, six sessions "
                   "that a replay compacts many times; kept out of dataset:all).")
def command(seeds: tuple[int, ...], tokens: tuple[str, ...], shape: str, out_dir: Path | None,
            memory: bool) -> None:
    """Generate coding-agent sessions with planted facts (Goose export JSON + manifest).

    Without options it regenerates the shipped set (48 sessions: seeds 1-6 at 5k-150k tokens
    by generator version 2, seeds 7-48 of six shapes by version 3). With --tokens it writes
    version-3 sessions of --shape. With --memory it regenerates the memory set.
    """
    # the light start: loads pydantic and jinja2
    from workbench.sessions._generate import (
        MEMORY,
        MEMORY_DIR,
        SHAPES,
        SHIPPED,
        DatasetSpec,
        dataset_name,
        generate_dataset,
    )

    if shape not in SHAPES:
        raise click.BadParameter(f"{shape!r} is not one of {', '.join(SHAPES)}",
                                 param_hint="--shape")
    sizes = _sizes(tokens)
    if memory and (seeds or sizes):
        raise click.BadParameter("--memory regenerates the memory set as it ships: give it "
                                 "no --seed or --tokens", param_hint="--memory")
    if out_dir is None:
        out_dir = Path(MEMORY_DIR if memory else "datasets")
    if memory:
        specs = list(MEMORY)
    elif not seeds and not sizes:
        specs = list(SHIPPED)
    elif not sizes:
        raise click.BadParameter("give at least one size", param_hint="--tokens")
    else:
        chosen = list(seeds) or list(range(1, len(sizes) + 1))
        if len(chosen) == 1:
            chosen = chosen * len(sizes)
        if len(chosen) != len(sizes):
            raise click.BadParameter(f"{len(chosen)} seeds for {len(sizes)} sizes: give one "
                                     "seed, or one per size", param_hint="--seed")
        specs = [DatasetSpec(seed, size, shape)
                 for seed, size in zip(chosen, sizes, strict=True)]
    manifest = generate_dataset(out_dir, specs)
    written = {f"{dataset_name(s.seed, s.target_tokens, s.version)}.json" for s in specs}
    for entry in manifest["sessions"]:
        if entry["file"] in written:
            click.echo(f"{out_dir / entry['file']}: {entry['shape']}, {entry['tokens']} tokens, "
                       f"{entry['messages']} messages, {entry['planted_facts']} planted facts")
