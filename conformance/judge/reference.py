"""The independent reference: NumPy float64, storage-aware values, gradients of values as they were.

It imports no framework and judges every framework alike; each op's meaning
lives with the op (``conformance/ops``), and this module gives the ops a
machine to act on.  The model (``docs/reference.md``):

* **Storage.**  A tensor (or NumPy array) is a window on a storage: a flat
  buffer and the positions of its elements in it.  Views, ``detach()``,
  ``.data``, zero-copy conversions and ``numpy()`` share the storage of their
  input; a write through any of them is seen through all of them.  Values are
  read from storage when they are observed or used.
* **History.**  Each tensor has an autograd node.  An op records the values it
  read when it ran, so a later write never changes the gradient of an earlier
  op.  A tracked in-place write gives the tensor a new node; through a tracked
  view, the view's base gets a node that splices the new values in
  (``CopySlices``).  An untracked write (through ``detach()``, ``.data``, a
  NumPy alias, or under ``no_grad``) changes storage and no history.
* **Gradients** are exact vector-Jacobian products accumulated into the
  ``grad`` of leaves.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

import numpy as np

from conformance.case.model import Case
from conformance.judge.model import (Float32Rounding, Machine, Module, Node, Optimizer, ReferenceFailure,
                                     ReferenceLimit, Tensor, held_grad, observation_key, release_grad, scatter,
                                     unbroadcast, zero_grad)
from conformance.ops import OBSERVATIONS, OPS

__all__ = ["Float32Rounding", "Machine", "Module", "Node", "Optimizer", "ReferenceFailure", "ReferenceLimit",
           "ReferenceResult", "SPREAD_RUNS", "Tensor", "float32_spread", "held_grad", "machine", "observation_key",
           "release_grad", "run_reference", "scatter", "unbroadcast", "zero_grad"]


def machine(**options: Any) -> Machine:
    """A machine that knows every op of this package (``Machine``'s options: deadline, rounding, ...)."""
    return Machine(OPS, OBSERVATIONS, **options)


@dataclass
class ReferenceResult:
    """Reference observations by recorded name: arrays, or None for "no gradient"."""

    observations: dict[str, np.ndarray | None]
    #: Where the value model stopped, and why, when it cannot model a step (only with ``partial``): the
    #: observations before it stand; what a framework shows after it is judged without values (memory).
    stopped: str | None = None
    #: Observations the reference cannot give, by recorded name, with why (only with ``partial``): the
    #: program goes on, e.g. past a read of elements that a growing ``resize_`` left undetermined.
    unjudged: dict[str, str] = field(default_factory=dict)
    #: Values some of whose elements a growing ``resize_`` left undetermined: their flat indices, by
    #: recorded name (the other elements are judged).
    undetermined: dict[str, list[int]] = field(default_factory=dict)
    #: Values some of whose elements may hold any of several values one write gave them in no defined
    #: order: flat index -> those values, by recorded name (each is judged against all of them).
    any_of: dict[str, dict[int, list[float]]] = field(default_factory=dict)


def run_reference(case: Case, time_limit: float = 60.0, rounding: Float32Rounding | None = None, *,
                  partial: bool = False, copies: Collection[str] = ()) -> ReferenceResult:
    """Interpret *case*; raise ReferenceFailure if it cannot, or ReferenceLimit if it has not finished
    within *time_limit* seconds (a case may loop for ever).  With *partial*, a step it cannot model ends
    the value model there instead (``stopped``), and an observation it cannot give is left out
    (``unjudged``): what it did model is still judged.  With *rounding*, every value is rounded as
    float32 arithmetic rounds it (:func:`float32_spread`).  *copies*: ops whose results are copies here
    (a framework's documented copies, ``Adapter.copies``), where the storage model has views."""
    interpreter = machine(deadline=time.monotonic() + time_limit, rounding=rounding, partial=partial,
                          copies=copies)
    try:
        interpreter.run(case.steps)
    except ReferenceFailure as exc:
        if not partial:
            raise
        return ReferenceResult(interpreter.observations, stopped=str(exc), unjudged=interpreter.unjudged,
                               undetermined=interpreter.undetermined, any_of=interpreter.any_of)
    return ReferenceResult(interpreter.observations, unjudged=interpreter.unjudged,
                           undetermined=interpreter.undetermined, any_of=interpreter.any_of)


#: Runs of the program in float32 behind :func:`float32_spread`: rounded to nearest, then stochastically.
SPREAD_RUNS = 5


def float32_spread(case: Case, reference: ReferenceResult, time_limit: float = 60.0,
                   copies: Collection[str] = (), approximate: Mapping[str, float] | None = None
                   ) -> dict[str, np.ndarray | None]:
    """How far float32 arithmetic can move each observation of *case* from its float64 reference: the
    largest distance, element by element, over runs of the program with every value rounded to float32
    (to nearest, then up or down at random, seeded by the case's id so a verdict is reproducible).

    An ill-conditioned value (``cos`` of a large argument, ``1 - tanh(x)**2`` at large ``x``) moves by
    far more than the default tolerance when its inputs are rounded, as every float32 program computing
    it does; a wrong value from an in-place hazard moves by the size of the hazard.  *approximate*: the
    kernels of the cell's device that are less exact than that, with their relative error
    (``Adapter.kernel_precision``)."""
    deadline = time.monotonic() + time_limit
    rng = np.random.default_rng(zlib.crc32(case.id.encode("utf-8")))
    spread: dict[str, np.ndarray | None] = {}
    for run in range(SPREAD_RUNS):
        rounded = run_reference(case, max(deadline - time.monotonic(), 0.001),
                                Float32Rounding(rng if run else None, approximate), partial=True,
                                copies=copies).observations
        for key, exact in reference.observations.items():
            value = rounded.get(key)
            if exact is None or value is None or np.shape(value) != np.shape(exact):
                spread.setdefault(key, None)
                continue
            with np.errstate(invalid="ignore"):
                distance = np.nan_to_num(np.abs(np.asarray(value, dtype=np.float64) - exact), nan=0.0, posinf=0.0)
            previous = spread.get(key)
            spread[key] = distance if previous is None else np.maximum(previous, distance)
    return spread


