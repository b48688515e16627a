"""What the Ray executor's processes pass each other, as types: the coordinator actor as the
driver and the workers hold it (`CoordinatorHandle`), its answer to a call (`Decision`), how a
call ended (`CallEnd`), a lost call (`LostCall`), and what a cell task fetches (`CellRefs`)
and returns (`CellTaskResult`).

Ray types the methods of an actor handle only for methods decorated with ``ray.method``; the
coordinator stays plain Python (its tests run it without Ray), so `CoordinatorHandle` says
what its handle offers: each method, sent with ``.remote(...)``, returns an object reference
to what the method returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, ParamSpec, Protocol, TypedDict, TypeVar

from workbench.compaction._model import Usage
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import Variant
from workbench.harness.results._cell_result import CellResult
from workbench.harness.run._qa_bank import QuestionBank
from workbench.harness.run._run_models import ModelFactory, QAModelFactory
from workbench.harness.run.executors._ray_recording import Batch
from workbench.messages import Message
from workbench.models._shared import SharedAnswer
from workbench.sessions import Session

if TYPE_CHECKING:  # Ray is an optional extra: its type is needed only by the type checker
    from ray import ObjectRef

__all__ = ["Answer", "CallEnd", "CellRefs", "CellTaskResult", "CoordinatorHandle", "Decision", "LostCall", "Remote"]

P = ParamSpec("P")
R = TypeVar("R")

Answer = tuple[Message, Usage]
"""A reply and its usage."""

Decision = (tuple[Literal["shared", "hit"], Message, Usage] | tuple[Literal["refusal"], str]
            | tuple[Literal["miss", "gone"]] | tuple[Literal["call"], int])
"""The coordinator's answer to a call (`Coordinator.call_begin` says what each means)."""

CallEnd = tuple[Message, Usage, float] | str | float | None
"""How a granted call ended (`Coordinator.call_end`): (message, usage, latency_ms) for
``ok``, the error text for ``refusal``, the retry-after seconds (or None) for
``rate_limited``, None for ``error``."""


class LostCall(TypedDict):
    """A call of a killed try that the kept try does not show (`Coordinator.lost_calls`)."""

    try_no: int
    seq: int
    model: str | None
    prompt_hash: str | None
    usage: Usage | None
    call_id: str | None
    node_id: str | None


CellRefs = tuple["ObjectRef[Session]", "ObjectRef[Variant]", "ObjectRef[Experiment]",
                 "ObjectRef[ModelFactory | None]", "ObjectRef[dict[str, int]]",
                 "ObjectRef[QuestionBank | None]", "ObjectRef[QAModelFactory | None]"]
"""What a cell task fetches from the object store (`run_cell_task` says what each is)."""

CellTaskResult = TypedDict("CellTaskResult", {
    "skipped": bool, "result": CellResult, "files": dict[str, str], "try": int, "node": str,
    "worker": str, "counts": list[tuple[str, str, int]]}, total=False)
"""What `run_cell_task` returns (its docstring says when which keys are set)."""


class Remote(Protocol[P, R]):
    """An actor method as its handle offers it."""

    def remote(self, *args: P.args, **kwargs: P.kwargs) -> ObjectRef[R]:
        """Send the call to the actor; the reference resolves to the method's return value."""
        ...


class CoordinatorHandle(Protocol):
    """The coordinator actor's handle (`Coordinator`'s methods, called remotely)."""

    @property
    def begin_cell(self) -> Remote[[str, int, str | None], int]:
        """`Coordinator.begin_cell`."""
        ...

    @property
    def stop(self) -> Remote[[str], None]:
        """`Coordinator.stop`."""
        ...

    @property
    def end_cell(self) -> Remote[[str], dict[str, Batch]]:
        """`Coordinator.end_cell`."""
        ...

    @property
    def drain(self) -> Remote[[], dict[str, Batch]]:
        """`Coordinator.drain`."""
        ...

    @property
    def call_begin(self) -> Remote[[str, int, str | None, str, str | None, str, str | None,
                                    str | None], Decision]:
        """`Coordinator.call_begin`."""
        ...

    @property
    def call_end(self) -> Remote[[int, str, CallEnd, str, str | None], str | None]:
        """`Coordinator.call_end`."""
        ...

    @property
    def lost_calls(self) -> Remote[[str, int | None], list[LostCall]]:
        """`Coordinator.lost_calls`."""
        ...

    @property
    def stats(self) -> Remote[[], dict[str, int]]:
        """`Coordinator.stats`."""
        ...

    @property
    def shared_state(self) -> Remote[[], tuple[dict[str, SharedAnswer], int, int]]:
        """`Coordinator.shared_state`."""
        ...
