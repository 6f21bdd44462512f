"""Activation checkpointing: a block of the case's own run through ``torch.utils.checkpoint.checkpoint``
(paddle: ``paddle.distributed.fleet.utils.recompute``), which keeps no activations of the block and runs it
again during backward to get them.

Both frameworks document the checkpointed call as computing what the function computes (torch: "the
output of checkpoint is the same as the output of the function"), so the reference runs the block as a
function.  A block that writes its input in place is the hazard: the recomputation starts from the input
as the first run left it.
"""

from __future__ import annotations

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.compiled_blocks import check_function_block, run_as_function


def _spell(w, s) -> None:
    name = f"_checkpointed_{s.number}"
    call = w.a.checkpoint_call(s.fields["use_reentrant"])
    w.functions += [line for line in w.a.checkpoint_imports() if line not in w.functions]
    w.function(name, list(s.args), list(s.out), s.steps, None,
               f"step {s.number}: the case's own block, checkpointed as its user checkpoints it", s,
               labelled=False, call=call)


register(Op(
    "checkpoint", "Define the nested steps as a function of the named tensors (args) that returns the out "
    "names, and call it through activation checkpointing (torch.utils.checkpoint.checkpoint(fn, *args, "
    "use_reentrant=...), paddle.distributed.fleet.utils.recompute(fn, *args, use_reentrant=...)); the call "
    "rebinds the out names.  The body sees only its arguments and what it binds; it holds no observation.",
    args=("*tensor",), out="many", block=True,
    fields={"steps": Field("steps", required=True),
            "use_reentrant": Field("bool", required=True, doc="the checkpoint implementation: true, the "
                                   "reentrant one (an autograd Function); false, the one on saved-tensor hooks")},
    check=check_function_block, run_reference=run_as_function, run_spell=_spell,
    fuzz="a function's arguments and returns must agree with its body's names: written by hand",
))
