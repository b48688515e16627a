"""ResponseCache and CachedModel: keys, modes, recorded usage, concurrency, crash safety, secrets."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench._paths import cache_path, user_dir
from workbench.compaction._model import Usage
from workbench.errors import CacheMiss, ConfigError
from workbench.messages import Message
from workbench.models import CachedModel, ResponseCache, cache_key
from workbench.models._cache import MIGRATIONS, prompt_hash
from workbench.testing import ScriptedModel

PLANTED = "sk-planted-XYZ"
USAGE = Usage(model="openai/gpt-4o-mini", input_tokens=120, output_tokens=30, total_tokens=150,
              cost=0.00042, extra={"model_version": "gpt-4o-mini-2024-07-18"})


class IdentityModel(ScriptedModel):
    """A scripted model that reports a cache identity (possibly with secrets in it)."""

    def __init__(self, *args, identity=None, **kw):
        super().__init__(*args, **kw)
        self.identity = identity or {"model": "openai/gpt-4o-mini", "temperature": 0}

    def cache_identity(self):
        return self.identity


def request(text: str = "Please summarize.") -> list[Message]:
    return [Message.user(text)]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    c = ResponseCache(tmp_path / "responses.db")
    yield c
    c.close()


async def test_a_second_identical_call_is_a_hit_with_the_recorded_usage(cache):
    inner = IdentityModel(["first answer", "second answer"], usage=USAGE, name="openai/gpt-4o-mini")
    model = CachedModel(inner, cache)
    msg1, usage1 = await model.complete("sys", request())
    msg2, usage2 = await model.complete("sys", request())
    assert len(inner.calls) == 1
    assert msg1.concat_text() == msg2.concat_text() == "first answer"
    assert usage1.extra["cache_hit"] is False
    assert usage2.extra == {"model_version": "gpt-4o-mini-2024-07-18", "cache_hit": True}
    assert (usage2.input_tokens, usage2.output_tokens, usage2.total_tokens, usage2.cost) == (
        120, 30, 150, 0.00042)
    assert usage2.model == "openai/gpt-4o-mini"
    assert cache.stats()["hits"] == 1


async def test_a_different_prompt_is_a_miss(cache):
    inner = IdentityModel(["a", "b", "c"])
    model = CachedModel(inner, cache)
    await model.complete("sys", request("one"))
    await model.complete("sys", request("two"))
    await model.complete("other sys", request("one"))
    assert len(inner.calls) == 3
    assert cache.stats()["entries"] == 3


def test_the_key_ignores_message_ids_and_creation_times():
    a = Message.user("same text", id="m1", created=1)
    b = Message.user("same text", id="m2", created=99999)
    assert cache_key({"model": "m"}, "s", [a]) == cache_key({"model": "m"}, "s", [b])


def test_the_key_changes_with_system_messages_model_and_parameters():
    base = cache_key({"model": "m", "temperature": 0}, "s", request("x"))
    changed = [
        cache_key({"model": "m", "temperature": 0}, "s2", request("x")),
        cache_key({"model": "m", "temperature": 0}, "s", request("y")),
        cache_key({"model": "m", "temperature": 0}, "s", [Message.assistant("x")]),
        cache_key({"model": "m2", "temperature": 0}, "s", request("x")),
        cache_key({"model": "m", "temperature": 0.7}, "s", request("x")),
        cache_key({"model": "m", "temperature": 0, "api_base": "http://127.0.0.1:1"}, "s",
                  request("x")),
    ]
    assert len(set(changed)) == len(changed)
    assert base not in changed


def test_the_key_excludes_api_key_timeout_and_retry_settings():
    plain = IdentityModel(identity={"model": "m", "temperature": 0})
    noisy = IdentityModel(identity={"model": "m", "temperature": 0, "api_key": PLANTED,
                                    "timeout": 5, "retry": {"attempts": 3}, "num_retries": 2,
                                    "max_retries": 4, "params": {"OPENAI_API_KEY": PLANTED}})
    cache_a = CachedModel(plain, cache=None, mode="off")  # type: ignore[arg-type]
    cache_b = CachedModel(noisy, cache=None, mode="off")  # type: ignore[arg-type]
    assert cache_b.cache_identity() == {"model": "m", "temperature": 0, "params": {}}
    key = cache_key(cache_a.cache_identity(), "s", request())
    assert re.fullmatch(r"[0-9a-f]{64}", key)  # a sha256, whatever the identity holds
    assert key != cache_key({"model": "m", "temperature": 0.5}, "s", request())
    assert cache_key({"model": "m", "temperature": 0, "params": {}}, "s", request()) == \
        cache_key(cache_b.cache_identity(), "s", request())


async def test_replay_mode_raises_cache_miss_with_the_documented_message(cache):
    inner = IdentityModel(name="openai/gpt-4o-mini")
    model = CachedModel(inner, cache, mode="replay")
    with pytest.raises(CacheMiss) as info:
        await model.complete("sys", request())
    h = prompt_hash("sys", request())
    assert str(info.value) == (
        f"replay-only cache has no recording for model openai/gpt-4o-mini (prompt sha256:{h[:12]}): "
        "a template, session or parameter set it was not recorded with; record it with "
        "`workbench record SPEC` (calls the real model), or leave it out of the model entry's "
        "`templates` or `sessions`")
    assert info.value.model == "openai/gpt-4o-mini"
    assert inner.calls == []


async def test_replay_mode_serves_a_recording_made_in_rw_mode_without_counting_hits(cache):
    inner = IdentityModel(["recorded"], usage=USAGE)
    await CachedModel(inner, cache, mode="rw").complete("sys", request())
    replayer = IdentityModel(["live answer that must not appear"])
    msg, usage = await CachedModel(replayer, cache, mode="replay").complete("sys", request())
    assert msg.concat_text() == "recorded"
    assert usage.cost == 0.00042 and usage.extra["cache_hit"] is True
    assert replayer.calls == []
    assert cache.stats()["hits"] == 0


async def test_off_mode_passes_every_call_through_and_records_nothing(cache):
    inner = IdentityModel(["a", "b"])
    model = CachedModel(inner, cache, mode="off")
    await model.complete("sys", request())
    msg, usage = await model.complete("sys", request())
    assert msg.concat_text() == "b" and "cache_hit" not in usage.extra
    assert cache.stats()["entries"] == 0


async def test_a_failed_call_is_not_recorded(cache):
    inner = IdentityModel(["ok"], raise_on={1: RuntimeError("boom")})
    model = CachedModel(inner, cache)
    with pytest.raises(RuntimeError):
        await model.complete("sys", request())
    assert cache.stats()["entries"] == 0
    msg, _ = await model.complete("sys", request())
    assert msg.concat_text() == "ok"


def test_an_unknown_mode_is_a_config_error(cache):
    with pytest.raises(ConfigError) as info:
        CachedModel(IdentityModel(), cache, mode="write")  # type: ignore[arg-type]
    assert str(info.value) == "unknown cache mode 'write'; use one of rw, replay, off"


def test_a_new_file_records_every_migration_once(tmp_path):
    path = tmp_path / "c.db"
    ResponseCache(path).close()
    ResponseCache(path).close()
    conn = sqlite3.connect(path)
    names = [r[0] for r in conn.execute("SELECT name FROM _workbench_migrations ORDER BY name")]
    columns = [r[1] for r in conn.execute("PRAGMA table_info(responses)")]
    count_columns = [r[1] for r in conn.execute("PRAGMA table_info(prompt_tokens)")]
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert names == [fn.__name__ for fn in MIGRATIONS] == [
        "m001_responses", "m002_indexes", "m003_refusals", "m004_prompt_tokens"]
    assert columns == ["key", "model", "prompt_hash", "text", "message_json", "usage_json", "cost",
                       "latency_ms", "model_version", "created_at", "hits", "refusal"]
    assert count_columns == ["key", "tokenizer", "tokens", "created_at"]
    assert mode == "wal"


async def test_the_stored_row_holds_text_cost_and_model_version(cache):
    inner = IdentityModel(["the summary"], usage=USAGE, name="openai/gpt-4o-mini")
    await CachedModel(inner, cache).complete("sys", request())
    conn = sqlite3.connect(cache.path)
    row = conn.execute("SELECT model, prompt_hash, text, cost, model_version, hits FROM responses"
                       ).fetchone()
    conn.close()
    assert row == ("openai/gpt-4o-mini", prompt_hash("sys", request()), "the summary", 0.00042,
                   "gpt-4o-mini-2024-07-18", 0)


async def test_stats_clear_and_prune(cache):
    model = CachedModel(IdentityModel(["a", "b", "c"], name="m"), cache)
    for text in ("1", "2", "3"):
        await model.complete("sys", request(text))
    conn = sqlite3.connect(cache.path)
    conn.execute("UPDATE responses SET created_at = '2000-01-01T00:00:00+00:00' WHERE text = 'a'")
    conn.commit()
    conn.close()
    stats = cache.stats()
    assert (stats["entries"], stats["models"], stats["oldest"]) == (
        3, {"m": 3}, "2000-01-01T00:00:00+00:00")
    assert cache.prune(30) == 1
    assert cache.prune(30) == 0
    assert cache.clear() == 2
    assert cache.stats()["entries"] == 0


async def test_export_writes_a_single_standalone_file(cache, tmp_path):
    await CachedModel(IdentityModel(["kept"]), cache).complete("sys", request())
    target = cache.export(tmp_path / "export" / "recording.db")
    assert not Path(f"{target}-wal").exists()
    copy = ResponseCache(target)
    msg, _ = copy.get(cache_key(IdentityModel().cache_identity(), "sys", request()))
    copy.close()
    assert msg.concat_text() == "kept"
    with pytest.raises(ConfigError):
        cache.export(target)
    cache.export(target, overwrite=True)


async def test_vacuum_folds_the_wal_into_the_main_file(cache):
    await CachedModel(IdentityModel(["x"]), cache).complete("sys", request())
    cache.vacuum()
    wal = Path(f"{cache.path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_the_default_cache_file_lives_under_the_user_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_USER_PATH", str(tmp_path / "u"))
    assert user_dir() == tmp_path / "u"
    assert cache_path() == tmp_path / "u" / "cache" / "responses.db"
    c = ResponseCache()
    assert c.path == tmp_path / "u" / "cache" / "responses.db" and c.path.exists()
    c.close()


def test_threads_writing_through_separate_connections_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            own = ResponseCache(path)
            model = CachedModel(IdentityModel([f"w{n}"]), own)
            for i in range(25):
                asyncio.run(model.complete("sys", request(f"{n}-{i % 20}")))
            own.close()
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check = ResponseCache(path)
    assert check.stats()["entries"] == 80
    assert check.stats()["hits"] == 20
    check.close()


async def test_a_process_killed_mid_write_leaves_a_readable_file(tmp_path):
    path = tmp_path / "killed.db"
    script = textwrap.dedent(f"""
        import sys
        from workbench.compaction._model import Usage
        from workbench.messages import Message
        from workbench.models import ResponseCache
        cache = ResponseCache({str(path)!r})
        big = "x" * 200_000
        i = 0
        while True:
            cache.put(f"k{{i}}", model="m", prompt_sha256="p", message=Message.assistant(big + str(i)),
                      usage=Usage(model="m", input_tokens=i))
            i += 1
            if i == 5:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    reopened = ResponseCache(path)
    count = reopened.stats()["entries"]
    assert count >= 5
    for i in range(count):
        msg, usage = reopened.get(f"k{i}", count_hit=False)
        assert msg.concat_text() == "x" * 200_000 + str(i) and usage.input_tokens == i
    reopened.close()


async def test_a_planted_api_key_never_reaches_any_file_the_cache_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    folder = user_dir()
    inner = IdentityModel(["answer"], usage=USAGE, name="openai/gpt-4o-mini",
                          identity={"model": "openai/gpt-4o-mini", "api_key": PLANTED,
                                    "temperature": 0, "timeout": 600})
    cache = ResponseCache()
    model = CachedModel(inner, cache)
    await model.complete("sys", request())
    await model.complete("sys", request())
    cache.export(tmp_path / "exported.db")
    written = [p for root in (folder, tmp_path) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "responses.db" for p in written)
    for p in written:
        assert PLANTED.encode() not in p.read_bytes(), p
    cache.close()


async def test_a_planted_api_key_passed_to_load_model_stays_out_of_the_recording(tmp_path,
                                                                                 monkeypatch):
    pytest.importorskip("workbench.models._litellm")
    from workbench.models import load_model

    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    model = load_model("cached:openai/gpt-4o-mini@8k", api_key=PLANTED, temperature=0,
                       cache_path=tmp_path / "rec" / "responses.db")
    assert PLANTED not in repr(model.cache_identity())

    async def offline_complete(system, messages):
        return Message.assistant("offline answer"), USAGE.copy(extra={})

    monkeypatch.setattr(model.inner, "complete", offline_complete)
    msg, _ = await model.complete("sys", request())
    assert msg.concat_text() == "offline answer"
    model.step("cache").cache.vacuum()
    for p in (tmp_path / "rec").rglob("*"):
        assert PLANTED.encode() not in p.read_bytes(), p


# ---- refusals and simulated windows ------------------------------------------------------


def _window_model(window: int):
    from workbench.testing import ScriptedModel

    return ScriptedModel(["fits"], window=window)


async def test_a_real_window_refusal_is_recorded_and_replayed_without_a_call(tmp_path):
    from workbench.errors import ContextLengthExceeded

    cache = ResponseCache(tmp_path / "c.db")
    inner = _window_model(5)
    big = [Message.user("far too many words for a five token window")]
    with pytest.raises(ContextLengthExceeded):
        await CachedModel(inner, cache, mode="rw").complete("sys", big)
    replay = CachedModel(_window_model(5), cache, mode="replay")
    with pytest.raises(ContextLengthExceeded) as err:
        await replay.complete("sys", big)
    assert not isinstance(err.value, CacheMiss)
    assert replay.inner.calls == []


async def test_a_simulated_window_refuses_before_the_cache_and_is_never_recorded(tmp_path):
    from workbench.errors import ContextLengthExceeded
    from workbench.models import WindowCap

    cache = ResponseCache(tmp_path / "c.db")
    inner = _window_model(10_000)
    capped = CachedModel(WindowCap(inner, 8), cache, mode="replay")
    with pytest.raises(ContextLengthExceeded, match="exceeds the simulated window of 8 tokens"):
        await capped.complete("a system prompt longer than eight tokens, surely", [])
    assert cache.stats()["entries"] == 0 and inner.calls == []
