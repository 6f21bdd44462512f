"""The case vocabulary: every op a step may name and every kind of observation, each declared once.

One module per op family (as onnx keeps one file per operator with its NumPy
reference).  An op's entry carries its arguments and fields (validation and the
JSON Schema read them), its reference semantics, and its default spelling;
adding an op is adding an entry to its family.
"""

from conformance.ops._op import Field, Op
from conformance.ops._registry import OBSERVATIONS, OPS, register, register_observation
from conformance.ops import (control, conversions, elementwise, layout, modules, observations,  # noqa: F401
                             shape_views, tensors, views, writes)  # (fill the table)
from conformance.ops import compiled_blocks  # noqa: F401  (a function the case compiles itself)
from conformance.ops import inplace_table  # noqa: F401  (in-place ops of paddle's test_inplace.py, out=)
from conformance.ops import complex  # noqa: F401  (complex tensors and their views)
from conformance.ops import autograd_state, masks  # noqa: F401  (retain_grad; bool masks and indexing with them)
from conformance.ops import dtype_views  # noqa: F401  (memory read as another dtype)
from conformance.ops import custom_functions  # noqa: F401  (a user's own forward and backward)
from conformance.ops import checkpoint  # noqa: F401  (a block recomputed during backward)
from conformance.ops.modules import MODULE_KINDS
from conformance.ops._op import Observation

__all__ = ["Field", "MODULE_KINDS", "OBSERVATIONS", "OPS", "Observation", "Op", "register",
           "register_observation"]
