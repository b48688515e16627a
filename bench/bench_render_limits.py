"""Cost of bounded rendering and of the stricter session loading (issue 9, items 4 and 5).

Run: ``python bench/bench_render_limits.py [--repeat 200]``. Offline; prints figures, asserts
nothing.

1. Render: the built-in compaction prompt over the largest shipped dataset's transcript, and the
   built-in summary template over a full sample summary, rendered by `workbench.compaction.render`
   (time and size limits, trace hook, operator intercepts) and by a plain sandbox with the same
   settings; per-render microseconds and the difference.
2. How fast a runaway template is cut: a triple nested loop and a huge power, with the default
   limits (wall time until the `TemplateError`).
3. Detection: `detect_format` of a 2 MB mini-swe-agent trajectory whose first 64 KB are its
   submission (the full-document parse the position-independent detection needs) against a
   same-size file whose telling keys come first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

from workbench.compaction import Templates, code_fence, format_transcript, render  # noqa: E402
from workbench.errors import TemplateError  # noqa: E402
from workbench.export._export import _sample_summary  # noqa: E402
from workbench.harness.experiment._cells import read_manifest  # noqa: E402
from workbench.sessions import detect_format, load_session  # noqa: E402


def _timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # warm the compile cache
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat * 1e6


def bench_render(repeat: int) -> None:
    manifest = read_manifest()
    largest = max(manifest.values(), key=lambda entry: entry[0].stat().st_size)[0]
    transcript = format_transcript(load_session(largest).messages, "goose")
    templates = Templates.default()
    summary = _sample_summary()
    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    plain.filters["code_fence"] = code_fence
    prompt_plain = plain.from_string(templates.compaction)
    summary_plain = plain.from_string(templates.summary)
    cases = [
        (f"compaction prompt ({len(transcript):,} chars of transcript)",
         lambda: render(templates.compaction, {"messages": transcript}),
         lambda: prompt_plain.render({"messages": transcript})),
        ("summary template (sample summary)",
         lambda: render(templates.summary, summary.to_context()),
         lambda: summary_plain.render(summary.to_context())),
    ]
    print(f"1. render cost, mean of {repeat} renders")
    for label, bounded, unbounded in cases:
        b, u = _timed(bounded, repeat), _timed(unbounded, repeat)
        print(f"   {label}: bounded {b:,.0f} us, plain sandbox {u:,.0f} us, "
              f"limits add {b - u:,.0f} us per render")


def bench_runaway() -> None:
    print("2. runaway templates, default limits")
    for label, source in (
            ("triple nested loop", "{% for a in range(9999) %}{% for b in range(9999) %}"
                                   "{% for c in range(9999) %}{% endfor %}{% endfor %}{% endfor %}"),
            ("huge power", "{{ 7 ** 10000000000 }}")):
        started = time.perf_counter()
        try:
            render(source, {})
            outcome = "rendered"
        except TemplateError as exc:
            outcome = str(exc).split(": ", 2)[-1][:70]
        print(f"   {label}: {time.perf_counter() - started:.2f} s -> {outcome}")


def bench_detection(tmp: Path) -> None:
    messages = [{"role": "user" if i % 2 else "assistant", "content": "step " * 400}
                for i in range(500)]
    info = {"submission": "+ line\n" * 12_000, "mini_version": "1.9.0", "exit_status": "Submitted"}
    late = tmp / "late.traj.json"
    late.write_text(json.dumps({"info": info, "messages": messages,
                                "trajectory_format": "mini-swe-agent-1"}), encoding="utf-8")
    early = tmp / "early.traj.json"
    early.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1", "messages": messages,
                                 "info": info}), encoding="utf-8")
    print("3. detect_format of a large JSON document, mean of 20")
    for label, path in (("telling keys after a 64 KB submission", late),
                        ("telling keys first", early)):
        assert detect_format(path) == "mini-swe-agent"
        us = _timed(lambda p=path: detect_format(p), 20)
        print(f"   {label} ({path.stat().st_size / 1e6:.1f} MB): {us / 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    bench_render(args.repeat)
    bench_runaway()
    with tempfile.TemporaryDirectory() as tmp:
        bench_detection(Path(tmp))


if __name__ == "__main__":
    main()
