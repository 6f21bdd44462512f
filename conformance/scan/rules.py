"""The scanner's rules: each one a pattern of in-place or aliasing code the catalogue has cases of.

A rule reads a function's trace (``scan/events.py``) and returns :class:`Sighting`\\ s: where the pattern is,
and its *facets*, the facts that tell one case of the pattern from another (which op saved the tensor,
which op wrote it, through which view), most telling first.  A rule names no case and knows no behaviour:
the catalogue's own programs, read by the same rules, say which case each sighting is
(``scan/catalogue.py``), and the committed results say what that case does on each framework and version.

Adding a rule is one class here, listed in :data:`RULES`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable

from conformance.scan.events import Read, Trace, Write
from conformance.scan.model import Saved, Value

__all__ = ["RULES", "Rule", "Sighting", "rule"]


@dataclass(frozen=True)
class Sighting:
    """One place where a rule's pattern is, with what tells its case."""

    code: str
    node: ast.AST
    facets: tuple[tuple[str, str], ...]
    #: the words of the message, filled in from what the code shows (names, lines, ops)
    says: str

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 0)

    @property
    def column(self) -> int:
        return getattr(self.node, "col_offset", 0) + 1


class Rule:
    """A pattern: its code, what it is about, and which of its facets decide the behaviour."""

    code: str = ""
    title: str = ""
    #: the facets a case of the catalogue must share with a sighting to stand for it (the others only make
    #: one case a closer match than another)
    decisive: tuple[str, ...] = ()

    def find(self, trace: Trace) -> Iterable[Sighting]:
        raise NotImplementedError


RULES: list[Rule] = []


def rule(cls: type[Rule]) -> type[Rule]:
    RULES.append(cls())
    return cls


# -- helpers the rules share ----------------------------------------------------------------------------


def _writer(write: Write) -> str:
    return f"call:{write.function}" if write.function else write.op


def _path(write: Write) -> str | None:
    """How the write escapes autograd's notice, if it does: ``.data``, ``detach``, a NumPy array, or an op
    that records no history (``set_value``)."""
    if write.op == "set_data" or write.fields.get("attribute") == "data":
        return "data"
    if write.untracked:
        return write.op
    return write.target.untracked_path


def _via(value: Value) -> str:
    view = value.through_view
    return f"view:{view.link_op}" if view is not None else "direct"


def _grad(write: Write) -> str:
    return "on" if write.grad_enabled else "off"


def _named(write: Write) -> str:
    return f"`{write.name}`" if write.name else "the tensor"


def _reads_elsewhere(trace: Trace, write: Write, *, same_object: bool) -> list:
    """Reads after *write* of its memory through another name (the same object: an alias) or through
    another object on the same memory that existed when it was written (a view, an array)."""
    found = []
    for read in trace.reads_after(write.time):
        if same_object:
            if read.value is write.target and read.name != write.name and read.name in write.aliases:
                found.append(read)
        elif read.value is not write.target and read.value.memory is not None \
                and read.value.memory is write.target.memory and read.value.made < write.time:
            found.append(read)
    return found


def _live(write: Write, elsewhere_too: bool = False) -> Saved | None:
    """The latest save of the written memory whose op's result a backward can reach (``Value.live``): by the
    code's own framework, else (*elsewhere_too*) by another framework's op only."""
    own = [saved for saved in write.saved if not saved.elsewhere]
    foreign = [saved for saved in write.saved if saved.elsewhere] if elsewhere_too else []
    for saved in (*reversed(own), *reversed(foreign)):
        if saved.result is None or saved.result.live:
            return saved
    return None


def _link_between(a: Value, b: Value) -> Value | None:
    """The value on the path between *a* and *b* that links them (a view, a conversion, an array)."""
    for value in (*a.chain(), *b.chain()):
        if value.link is not None and (value in set(a.chain()) ^ set(b.chain())):
            return value
    return None


# -- the rules -------------------------------------------------------------------------------------------


@rule
class SavedTensorWrite(Rule):
    code = "IC101"
    title = "an in-place write to a tensor an op saved for its backward"
    # saved_in: only another framework's op saves it (a finding of a port there), never taken for one that
    # the code's own framework saves
    decisive = ("rebinds", "role", "saved_in")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if _path(write) or write.target.kind == "array":
                continue
            saved = _live(write, elsewhere_too=True)
            if saved is None:
                continue
            facets = (("rebinds", str(write.rebinds)), ("role", saved.role), ("via", _via(write.target)),
                      ("writer", _writer(write)), ("saver", saved.op), ("grad", _grad(write)))
            where = ""
            if saved.elsewhere:
                facets += (("saved_in", ",".join(saved.elsewhere)),)
                where = f" in {', '.join(saved.elsewhere)}"
            yield Sighting(self.code, write.node, facets,
                           f"{_named(write)} is written in place after `{saved.op}` saved it{where} (its "
                           f"{saved.role}, line {saved.node.lineno}) for backward")


@rule
class UntrackedWrite(Rule):
    code = "IC102"
    title = "a write through .data, .detach(), a NumPy array or set_value into a tensor autograd uses"
    decisive = ("path", "spelling", "after")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            path = _path(write)
            if not path:
                continue
            saved = _live(write)
            owner = write.target.root()
            # x.data *= 3 in one statement is paddle's .data setter; a handle (h = x.data) written later is not
            spelling = "attribute" if write.fields.get("attribute") == "data" else "handle"
            if saved is not None:
                what, saver = "saved", saved.op
            elif path == "data" and (write.leaf or owner.leaf) and (spelling == "handle" or (
                    owner.live or any(b.time > write.time for b in trace.backwards)
                    or any(r.value is not owner for r in _reads_elsewhere(trace, write, same_object=False)))):
                # .data of a leaf: a write through a handle (which some releases refuse on a leaf), or the setter
                # whose leaf a backward then reads, or another name on its memory does
                what, saver = "leaf", ""
            else:
                continue
            facets = (("path", path), ("spelling", spelling), ("after", what), ("rebinds", str(write.rebinds)),
                      ("writer", _writer(write)), ("saver", saver), ("grad", _grad(write)))
            through = {"data": "`.data`", "numpy": "a NumPy array on its memory"}.get(path, f"`{path}`")
            about = (f"the tensor `{saved.op}` saved for backward (line {saved.node.lineno})"
                     if saved is not None else "a leaf that requires grad")
            yield Sighting(self.code, write.node, facets, f"a write through {through} into {about}")


@rule
class LeafWrite(Rule):
    code = "IC103"
    title = "an in-place write to a leaf that requires grad"
    decisive = ("rebinds", "grad", "compiled")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if not write.leaf or _path(write) or write.target.grad_of is not None:
                continue
            if not write.grad_enabled and not write.relayout:
                continue  # the documented way to update a parameter: under no_grad
            # under no_grad the documented way to update a parameter is a write of its values: only a write that
            # relays the leaf out (set_, resize_, transpose_) is seen there, and which one decides
            grad = "on" if write.grad_enabled else f"off:{_writer(write)}"
            facets = (("rebinds", str(write.rebinds)), ("grad", grad), ("compiled", write.compiled or "no"),
                      ("via", _via(write.target)), ("writer", _writer(write)))
            yield Sighting(self.code, write.node, facets,
                           f"{_named(write)} is a leaf that requires grad, written in place"
                           + ("" if write.grad_enabled else " (under no_grad)"))


@rule
class AugmentedAlias(Rule):
    code = "IC104"
    title = "an augmented assignment (+=, -=, *=, /=, **=, //=, %=) to a tensor another name still holds"
    decisive = ("witness", "grad")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if not write.rebinds or _path(write) or write.target.grad_of is not None or write.target.kind == "array":
                continue
            readers = _reads_elsewhere(trace, write, same_object=True)
            if readers and write.target.kind == "tensor":
                witness, says = "alias", (f"`{readers[0].name}` is the same tensor as {_named(write)}, and is read "
                                          f"after it (line {readers[0].node.lineno})")
            elif write.leaf:
                witness, says = "parameter", f"{_named(write)} is a leaf that requires grad (a parameter)"
            else:
                continue
            facets = (("witness", witness), ("grad", _grad(write)), ("writer", write.op))
            yield Sighting(self.code, write.node, facets, f"`{write.op}` on {_named(write)}: {says}")


@rule
class ViewWrite(Rule):
    code = "IC105"
    title = ("an in-place write seen through another view or alias of the same memory (detach, a slice, reshape), "
             "or into a view that holds one element of memory more than once (expand)")
    decisive = ("rebinds", "write", "read", "options", "graph", "kind", "after")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if _path(write) or write.target.kind == "array":
                continue
            view = write.target.through_view
            readers = [r for r in _reads_elsewhere(trace, write, same_object=False) if r.value.kind != "array"
                       and not _numpy_between(r.value, write.target)]
            in_graph = write.requires_grad is not False and write.grad_enabled
            written_via = _relation(write.target)
            if any(link.overlaps for link in write.target.chain()):
                reader, read_via = None, "overlap"  # the write itself: one place of memory written several times
            elif readers:
                reader = readers[0]
                read_via = _relation(reader.value)
                if written_via == "base" and read_via == "base":
                    continue  # two names of one tensor: the alias rule's
            elif view is not None and in_graph and any(b.time > write.time for b in trace.backwards):
                reader, read_via = None, "backward"
            else:
                continue
            options = view.given if view is not None else ()
            facets = (("rebinds", str(write.rebinds)), ("write", written_via), ("read", read_via),
                      ("options", ",".join(options)),
                      ("graph", "grad" if in_graph else "plain"), ("kind", "relayout" if write.relayout else "values"),
                      ("after", "relayout" if _apart(write, reader) else "none"), ("writer", _writer(write)))
            through = "" if written_via == "base" else f" through a `{written_via}` view"
            seen = ("several of its elements are one place of memory" if read_via == "overlap" else
                    "backward reads the graph" if reader is None else
                    f"`{reader.name}` ({'the base' if read_via == 'base' else 'a `' + read_via + '` of it'}) is read "
                    f"after (line {reader.node.lineno})")
            yield Sighting(self.code, write.node, facets, f"{_named(write)} is written in place{through}; {seen}")


def _apart(write: Write, reader: Read | None) -> bool:
    """Whether a relayout of the memory (``resize_``, ``set_``, ``cast_``) came between a view the write or the
    read goes through and the write: that view still looks at the old memory.  A view made after the
    relayout looks at the new one, as the base does."""
    if write.relaid is None:
        return False
    values = [write.target] if reader is None else [write.target, reader.value]
    return any(_view_made(value) < write.relaid for value in values if _view_made(value) is not None)


def _view_made(value: Value) -> int | None:
    """When the nearest view or untracked alias on *value*'s way to its memory was made; None: it is the base."""
    for link in value.chain():
        if link.link in ("view", "untracked"):
            return link.made
    return None


def _relation(value: Value) -> str:
    """How a value reaches the memory it is on: the op of its nearest view or untracked alias, else ``base``."""
    for link in value.chain():
        if link.link in ("view", "untracked"):
            return link.link_op or link.link
    return "base"


def _numpy_between(a: Value, b: Value) -> bool:
    return any(v.link in ("tensor->array", "array->tensor") for v in (*a.chain(), *b.chain()))


@rule
class SharedWithNumpy(Rule):
    code = "IC106"
    title = "a write to memory a tensor and a NumPy array share, read on the other side"
    decisive = ("link", "zero_copy")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            readers = [r for r in _reads_elsewhere(trace, write, same_object=False)
                       if r.value.kind != write.target.kind and r.value.kind in ("tensor", "array")
                       and _numpy_between(r.value, write.target)]
            if not readers:
                continue
            link = next((v for v in (*write.target.chain(), *readers[0].value.chain())
                         if v.link in ("tensor->array", "array->tensor")), None)
            if link is None:
                continue
            zero_copy = str(link.op == "construct_tensor" and "zero_copy" in link.given)
            facets = (("link", link.link_op or "?"), ("zero_copy", zero_copy), ("side", write.target.kind),
                      ("writer", _writer(write)))
            other = "array" if write.target.kind == "tensor" else "tensor"
            yield Sighting(self.code, write.node, facets,
                           f"{_named(write)} shares memory with a NumPy {other if other == 'array' else 'tensor'} "
                           f"(`{link.link_op}`, line {getattr(link.node, 'lineno', '?')}), which is read after "
                           f"(line {readers[0].node.lineno})")


@rule
class NumpyOfGradTensor(Rule):
    code = "IC107"
    title = ".numpy() of a tensor that requires grad"
    decisive = ("of",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op == "numpy" and use.requires_grad is True:
                yield Sighting(self.code, use.node, (("of", "leaf" if use.leaf else "result"),),
                               "`.numpy()` of a tensor that requires grad")


@rule
class HeldGradient(Rule):
    code = "IC108"
    title = "a gradient held in a name (g = w.grad): written in place, or read after zero_grad"
    decisive = ("what", "grad", "then")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if any(v.grad_of is not None for v in write.target.chain()):
                facets = (("what", "write"), ("grad", _grad(write)), ("rebinds", str(write.rebinds)),
                          ("writer", write.op))
                yield Sighting(self.code, write.node, facets,
                               f"{_named(write)} holds a `.grad`, written in place (the gradient itself changes)")
        for zero in trace.zero_grads:
            for read in trace.reads_after(zero.time):
                value = read.value
                if value.grad_of is not None and value.made < zero.time:
                    then = "backward" if any(zero.time < b.time < read.time for b in trace.backwards) else "read"
                    facets = (("what", "zero_grad"), ("grad", "on"), ("then", then),
                              ("set_to_none", str(zero.set_to_none)))
                    yield Sighting(self.code, read.node, facets,
                                   f"`{read.name}` holds a `.grad` taken before zero_grad (line {zero.node.lineno})")
                    break


@rule
class StaleGraph(Rule):
    code = "IC109"
    title = "backward through a graph computed before the parameters it used changed (an optimizer step)"
    decisive = ("where",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for backward in trace.backwards:
            if backward.stale is None:
                continue
            facets = (("where", str(backward.where)), ("by", backward.stale), ("retain", str(backward.retain)))
            where = f" (line {backward.update.lineno})" if backward.update is not None else ""
            yield Sighting(self.code, backward.node, facets,
                           f"backward reaches values computed before the parameters they used were updated in "
                           f"place{where}")


@rule
class OutWithGrad(Rule):
    code = "IC110"
    title = "out= on inputs that require grad"
    decisive = ("op",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op == "out":
                yield Sighting(self.code, use.node, (("op", str(use.fields.get("op"))),),
                               "`out=` on an input that requires grad")


@rule
class CompiledArgumentWrite(Rule):
    code = "IC111"
    title = "an in-place write to an argument inside a compiled function"
    decisive = ("rebinds", "grad")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if not write.compiled or write.call is not None:
                continue
            argument = next((v.argument for v in write.target.chain() if v.argument), None)
            if argument is None:
                continue
            facets = (("rebinds", str(write.rebinds)), ("grad", _grad(write)), ("via", _via(write.target)),
                      ("writer", _writer(write)))
            yield Sighting(self.code, write.node, facets,
                           f"`{argument}`, an argument of a function compiled by {write.compiled}, is written in place")


@rule
class ConversionAlias(Rule):
    code = "IC112"
    title = "a write to what a conversion returned, when the conversion returned its input"
    decisive = ("rebinds", "conversion", "argument")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            link = next((v for v in write.target.chain() if v.link == "self"), None)
            readers = _reads_elsewhere(trace, write, same_object=False)
            if link is None or not readers:
                continue
            facets = (("rebinds", str(write.rebinds)), ("conversion", link.link_op or "?"),
                      ("argument", link.argument_kind or "none"), ("writer", _writer(write)))
            yield Sighting(self.code, write.node, facets,
                           f"{_named(write)} came from `{link.link_op}`, which returns the tensor itself when it "
                           f"already is what was asked; the original is read after (line {readers[0].node.lineno})")


@rule
class MaskedWrite(Rule):
    code = "IC113"
    title = "a boolean-mask write into a tensor in the graph"
    decisive = ("writes",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if write.op == "mask_setitem" and write.grad_enabled and write.requires_grad is not False \
                    and not write.leaf:
                source = "self" if write.source is not None and write.source.op == "mask_getitem" else "other"
                yield Sighting(self.code, write.node, (("writes", source),),
                               f"{_named(write)}[mask] = ... writes the elements a mask picks, in the graph")


@rule
class GradientToSource(Rule):
    code = "IC114"
    title = "an in-place write of a tensor that requires grad: its gradient must flow back to it"
    decisive = ("into", "writer")

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if not write.grad_enabled or _path(write) or write.source is None or write.source.requires_grad is not True:
                continue
            if write.op in ("mask_setitem",):
                continue  # the mask write's own rule
            into = "untracked" if write.requires_grad is False else "graph"
            facets = (("into", into), ("writer", _writer(write)))
            yield Sighting(self.code, write.node, facets,
                           f"`{write.op}` writes a tensor that requires grad into {_named(write)}: the gradient must "
                           f"flow back to it" + (", though the target requires none" if into == "untracked" else ""))


@rule
class ViewGradState(Rule):
    code = "IC115"
    title = "requires_grad_(False) or detach_() on a view or a result in the graph"
    decisive = ("op",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            off = (use.op == "requires_grad_" and use.fields.get("requires_grad") is False) or use.op == "detach_"
            # in the graph: known to require grad, or computed from parameters (an argument taken as it came, a
            # network's input or a label, need not require grad at all, and then torch accepts the flag)
            in_graph = use.requires_grad is True or (use.requires_grad is None and use.from_parameters)
            if off and use.view and in_graph:
                yield Sighting(self.code, use.node, (("op", use.op),),
                               f"`{use.op}` on a view of a tensor in the graph")


@rule
class RetainGradTwice(Rule):
    code = "IC116"
    title = "retain_grad() on a tensor, then more than one backward"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op == "retain_grad" and len([b for b in trace.backwards if b.time > use.time]) > 1:
                yield Sighting(self.code, use.node, (("backwards", "many"),),
                               "the retained gradient of a non-leaf across two backward calls")
                break


@rule
class GradFnRead(Rule):
    code = "IC117"
    title = "reading .grad_fn to tell whether a tensor has a history"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op == "grad_fn":
                history = {True: "yes", False: "no", None: "unknown"}[use.requires_grad]
                yield Sighting(self.code, use.node, (("history", history),),
                               "`.grad_fn` read to tell a tensor's history")


@rule
class OverlappingUnfold(Rule):
    code = "IC118"
    title = "unfold with overlapping windows on a tensor in the graph"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op != "unfold" or use.requires_grad is False or not use.grad_enabled:
                continue
            size, step = (use.numbers[1:3] + (None, None))[:2] if len(use.numbers) >= 3 else (None, None)
            if isinstance(size, int) and isinstance(step, int) and step >= size:
                continue  # windows that do not overlap: no element in two of them
            yield Sighting(self.code, use.node, (("windows", "overlap"),),
                           "`unfold` whose windows overlap, on a tensor that requires grad")


@rule
class CopyingConversion(Rule):
    code = "IC119"
    title = "to(..., copy=True) of a tensor that requires grad"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if (use.op == "to" and use.fields.get("copy") is True and use.requires_grad is not False
                    and use.grad_enabled):  # NumPy's np.array(t, copy=True) leaves the graph by design
                yield Sighting(self.code, use.node, (("copy", "True"),),
                               "a copying conversion of a tensor that requires grad")


@rule
class OutReadsItself(Rule):
    code = "IC120"
    title = "out= naming one of the op's own inputs"
    decisive = ("op",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op == "out_reads":
                yield Sighting(self.code, use.node, (("op", str(use.fields.get("op"))),),
                               "`out=` names memory the op also reads: a kernel may overwrite an input before it "
                               "has read all of it")


#: In-place comparisons and logical ops: torch keeps the tensor's dtype (1s and 0s), paddle makes it bool.
IN_PLACE_COMPARISONS = frozenset({"gt_", "ge_", "lt_", "le_", "eq_", "ne_", "greater_than_", "greater_equal_",
                                  "less_than_", "less_equal_", "equal_", "not_equal_", "logical_and_",
                                  "logical_or_", "logical_xor_", "logical_not_"})


@rule
class InPlaceComparison(Rule):
    code = "IC121"
    title = "an in-place comparison or logical op, then another in-place op written into its result"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        # The hazard is what is written into the result afterwards (paddle refuses a float op, or a logical
        # op with a float operand, on the bool tensor its comparison made); a comparison read only out of place
        # computes alike in both.
        for write in trace.writes:
            if write.op not in IN_PLACE_COMPARISONS:
                continue
            later = next((w for w in trace.writes if w.time > write.time and w.target is write.target), None)
            if later is not None:
                yield Sighting(self.code, write.node, (("op", "comparison_"),),
                               f"`{write.op}` writes 1s and 0s into {_named(write)} and `{later.op}` (line "
                               f"{getattr(later.node, 'lineno', '?')}) writes into it again: torch keeps its "
                               f"dtype, paddle makes it a bool tensor and refuses a float operand")


@rule
class OnePairPad(Rule):
    code = "IC122"
    title = "F.pad with one pair of widths and no data_format"
    decisive = ("pairs",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        # Only one pair: with more, which dimension paddle pads first depends on the tensor's number of
        # dimensions, which the trace does not know (pad_every_dimension_orders_them says so).
        for use in trace.uses:
            if use.op != "pad" or not isinstance(use.node, ast.Call):
                continue
            if any(k.arg == "data_format" for k in use.node.keywords):
                continue
            widths = use.node.args[1] if len(use.node.args) > 1 else None
            if isinstance(widths, (ast.List, ast.Tuple)) and len(widths.elts) == 2:
                yield Sighting(self.code, use.node, (("pairs", "1"),),
                               "`F.pad` with one pair of widths: paddle 2.6 takes it only with data_format='NCL' "
                               "for a 3-D tensor (and refuses it by default); torch and paddle 3 pad the last "
                               "dimension")


@rule
class ArrayAssigned(Rule):
    code = "IC123"
    title = "index assignment of a NumPy array or a Python list into a tensor"
    decisive = ("value",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            if write.op not in ("setitem", "setitem_list") or write.target.kind != "tensor":
                continue
            assigned = write.node.value if isinstance(write.node, ast.Assign) else None
            if isinstance(assigned, ast.List):
                value = "list"
            elif (write.source is not None and write.source.kind == "array" and isinstance(write.source.node, ast.Call)
                  and isinstance(write.target.root().node, ast.Call)):
                # an array a NumPy call made (arithmetic on arrays may be a NumPy scalar, which both take),
                # into a tensor a call made (one computed by arithmetic with NumPy values may be an array)
                value = "array"
            else:
                continue
            says = "a NumPy array" if value == "array" else "a Python list"
            yield Sighting(self.code, write.node, (("value", value),),
                           f"{says} assigned into {_named(write)} by index assignment")


def by_code() -> dict[str, Rule]:
    return {r.code: r for r in RULES}


#: The 8-byte dtypes: a view as one of them is wider than a tensor of the frameworks' default float32 (the trace
#: keeps no dtypes: the rule reads the constructor that made the tensor).
WIDE_DTYPES = frozenset({"float64", "double", "int64", "long"})
#: Factories whose default dtype is float32 (the frameworks' default float), whatever their arguments.
FLOAT_FACTORIES = frozenset({"zeros", "ones", "rand", "randn", "empty", "uniform", "normal"})


@rule
class WiderDtypeView(Rule):
    code = "IC124"
    title = "a view as a wider dtype (float64, int64) of a tensor made as float32"

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for use in trace.uses:
            if use.op != "view_dtype" or not isinstance(use.node, ast.Call) or not use.node.args:
                continue
            wanted = _dtype_name(use.node.args[0])
            made = use.value.root().node
            if wanted in WIDE_DTYPES and isinstance(made, ast.Call) and _made_as_float32(made):
                yield Sighting(self.code, use.node, (("dtype", "wider"),),
                               f"a view as {wanted} of a tensor made as float32: each of its elements spans two "
                               f"of the tensor's")


def _dtype_name(node: ast.expr) -> str | None:
    """``torch.float64``, ``paddle.float64`` or ``'float64'`` as ``float64``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _made_as_float32(call: ast.Call) -> bool:
    """Whether a constructor call makes a float32 tensor: no dtype named, and either a factory of floats or a
    literal with a float in it (a literal of whole numbers makes int64); a named dtype decides otherwise."""
    named = next((k.value for k in call.keywords if k.arg == "dtype"), None)
    if named is not None:
        return _dtype_name(named) in ("float32", "float", "float16", "half", "bfloat16", "int32", "int", "int16",
                                      "uint8", "int8")
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if name in FLOAT_FACTORIES:
        return True
    if name in ("tensor", "to_tensor", "as_tensor") and call.args:
        return any(isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(call.args[0]))
    return False


@rule
class InPlaceWithoutDerivative(Rule):
    code = "IC125"
    title = "an in-place op some framework has no derivative for, on a tensor that requires grad"
    decisive = ("lacks",)

    def find(self, trace: Trace) -> Iterable[Sighting]:
        for write in trace.writes:
            lacks = write.fields.get("no_backward")
            if not lacks or not write.grad_enabled or write.requires_grad is False:
                continue
            yield Sighting(self.code, write.node, (("lacks", str(lacks)), ("writer", _writer(write))),
                           f"`{_writer(write)}` in place on a tensor that requires grad: {lacks} implements no "
                           f"derivative for it, so a backward through it raises there")
