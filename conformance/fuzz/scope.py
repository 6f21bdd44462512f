"""Whether a finding is about in-place or aliasing semantics at all.

The matrix records what frameworks do when code writes into memory or gives two names one memory.  A
program that does neither (``selu`` of a float64 scalar, computed by one framework in float32 precision)
can still differ from the reference, but its difference is one of arithmetic: the same in every spelling,
with no write to move or alias to follow.  Such a finding is reported apart and never becomes a case.

The op table and the reference decide, not a list of ops: a step is in-place when the op table declares it
so (an in-place op, an augmented assignment, an op with no result of its own: ``setitem``, ``backward``,
``zero_grad``), and the reference, interpreting the shrunk program, watches for a write into memory a value
already held (an in-place module, an optimizer step), a gradient accumulated into a ``.grad`` that already
held one, and two names left on one memory (a view, ``detach``, a NumPy bridge, an op that returns its
input).  A program the reference cannot interpret is kept in scope: doubt never drops a finding.
"""

from __future__ import annotations

from typing import Any, Iterable

from conformance.case.model import Case
from conformance.fuzz.cause import writes
from conformance.judge.reference import Machine, Tensor, machine

__all__ = ["out_of_scope"]

#: Why a finding is out of scope, as the report says it.
NO_WRITE_NO_ALIAS = ("no step writes into memory a value already held, accumulates a gradient, or leaves two "
                     "names on one memory: a difference of arithmetic, not of in-place or aliasing semantics")


class _Watching:
    """What a run of the reference did to memory."""

    def __init__(self) -> None:
        self.wrote = False
        self.accumulated = False


def _watched(watching: _Watching, time_limit: float) -> Machine:
    import time

    interpreter = machine(deadline=time.monotonic() + time_limit)
    write, backward = interpreter.write, interpreter.backward

    def watched_write(*args: Any, **kwargs: Any) -> None:
        watching.wrote = True
        write(*args, **kwargs)

    def watched_backward(*args: Any, **kwargs: Any) -> None:
        if any(t.grad is not None for t in _tensors(interpreter.env.values())):
            watching.accumulated = True
        backward(*args, **kwargs)

    interpreter.write, interpreter.backward = watched_write, watched_backward  # type: ignore[method-assign]
    return interpreter


def _tensors(values: Iterable[Any]) -> list[Tensor]:
    """The tensors (and arrays) bound to names, and the parameters of bound modules."""
    found: list[Tensor] = []
    for value in values:
        if isinstance(value, Tensor):
            found.append(value)
        else:
            found += [v for v in vars(value).values() if isinstance(v, Tensor)] if hasattr(value, "__dict__") else []
            found += [v for v in getattr(value, "parameters", {}).values() if isinstance(v, Tensor)] \
                if isinstance(getattr(value, "parameters", None), dict) else []
    return found


def _shares_memory(interpreter: Machine) -> bool:
    """Whether two names hold one memory: the same tensor, a view of another, or an alias of it."""
    storages = [id(value.storage) for value in interpreter.env.values() if isinstance(value, Tensor)]
    return len(set(storages)) < len(storages)


def out_of_scope(case: Case, time_limit: float = 10.0) -> str | None:
    """Why *case* (a shrunk finding) is not about in-place or aliasing semantics; None when it is, or when
    the reference cannot say."""
    if any(writes(step.op) for step in case.walk() if step.op != "observe"):
        return None
    watching = _Watching()
    interpreter = _watched(watching, time_limit)
    try:
        interpreter.run(case.steps)
    except Exception:  # the reference could not interpret it: keep the finding
        return None
    if watching.wrote or watching.accumulated or _shares_memory(interpreter):
        return None
    return NO_WRITE_NO_ALIAS
