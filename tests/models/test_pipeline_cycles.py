"""A composed pipeline is freed by reference counting: no cycle keeps it (and what its steps
and the calls' replies hold) alive until the garbage collector runs."""

from __future__ import annotations

import asyncio
import gc
import weakref

from workbench.compaction import Usage
from workbench.harness.run._record import RecordStep
from workbench.models._pipeline import compose
from workbench.models._shared import SharedCalls
from workbench.testing import ScriptedModel


def test_a_pipeline_that_answered_goes_when_its_last_reference_does() -> None:
    model = ScriptedModel(["the summary"], usage=Usage(model="scripted", input_tokens=3,
                                                       output_tokens=2))
    record = RecordStep()
    pipeline = compose(model, record=record, share=SharedCalls().step(scope=0))
    reply, usage = asyncio.run(pipeline.complete("system", []))
    assert reply.concat_text() == "the summary" and usage.input_tokens == 3
    assert record.last_text == "the summary"
    gone = [weakref.ref(pipeline), weakref.ref(record), weakref.ref(model)]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del pipeline, record, model
        assert [ref() for ref in gone] == [None, None, None]
    finally:
        if was_enabled:
            gc.enable()
