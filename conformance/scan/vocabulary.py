"""The ops as the scanner reads them: which op a form spells in each framework, and what each op does.

Everything here comes from the shipped catalogue data (``scan/data.py``), derived from the op registry, the
reference and the kept programs (``scan/derive.py``).  Where a framework spells an op in a way no kept
program shows, the frameworks' own naming conventions fill in: a root function is also a tensor method
(``torch.relu(x)`` / ``x.relu()``), an activation lives in the functional namespace too
(``torch.nn.functional.relu``), and a method another framework's programs spell is taken as that op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.scan.forms import INPLACE_SUFFIX, OUT_SUFFIX

__all__ = ["OpFacts", "OpUse", "Vocabulary"]

#: The frameworks whose code the scanner reads, by their import name.
FRAMEWORKS = ("torch", "paddle")


@dataclass(frozen=True)
class OpFacts:
    """What an op does, as the reference and the registry say (``scan/derive.py``)."""

    name: str
    returns: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    relayout: frozenset[str] = frozenset()
    keeps_grad: frozenset[bool] = frozenset()
    #: a view it returns holds one element of memory more than once (``expand``)
    overlaps: bool = False
    rebinds: bool = False
    binds: str = "tensor"
    block: bool = False
    #: it binds several names (``a, b = t.split(...)``): each one a part of what a view op returns
    many: bool = False
    saves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tracked: frozenset[bool] = frozenset()
    #: whether the reference ran a step of it (else only its name can tell what it does)
    observed: bool = True
    #: the op's fields in order, each with whether a step must give it
    fields: tuple[tuple[str, bool], ...] = ()
    #: the frameworks that implement no derivative for it (a backward through it raises there)
    no_backward: tuple[str, ...] = ()

    @classmethod
    def from_data(cls, name: str, data: Mapping[str, Any]) -> "OpFacts":
        return cls(name, returns=frozenset(data.get("returns", ())), writes=frozenset(data.get("writes", ())),
                   relayout=frozenset(data.get("relayout", ())), keeps_grad=frozenset(data.get("keeps_grad", ())),
                   overlaps=bool(data.get("overlaps")),
                   rebinds=bool(data.get("rebinds")), binds=str(data.get("binds", "tensor")),
                   block=bool(data.get("block")), many=bool(data.get("many")), saves={fw: tuple(v) for fw, v in (data.get("saves") or {}).items()},
                   tracked=frozenset(data.get("tracked", ())),
                   fields=tuple((str(n), bool(r)) for n, r in data.get("fields", ())),
                   observed=bool(data.get("observed", True)),
                   no_backward=tuple(data.get("no_backward", ())))

    @property
    def untracked_writer(self) -> bool:
        """A write no history records, even in grad mode (``set_value``, ``t.data = src``)."""
        return self.tracked == frozenset({False})

    def options_given(self, count: int) -> tuple[str, ...]:
        """The optional fields a call that passes *count* arguments after the tensor gives, by position."""
        return tuple(name for name, required in self.fields[:count] if not required)

    @property
    def in_place(self) -> bool:
        return bool(self.writes or self.relayout)

    @property
    def write_roles(self) -> frozenset[str]:
        """The arguments a step writes; an op the reference never ran writes its first argument when its
        name carries the frameworks' mark of an in-place op (a trailing underscore)."""
        if not self.observed and self.name.endswith("_") and not self.name.startswith("_"):
            return frozenset({"arg0"})
        return self.writes

    @property
    def cuts_grad(self) -> bool:
        """A result of a tensor that requires grad requires none (``detach``, ``numpy``, ``.grad``)."""
        return self.keeps_grad == frozenset({False})

    def saved(self, framework: str) -> tuple[str, ...]:
        return self.saves.get(framework, ())


@dataclass(frozen=True)
class OpUse:
    """An op as one spelling names it: the op, and the fields the spelling itself fixes (a module's kind)."""

    op: str
    fields: Mapping[str, Any]
    facts: OpFacts


class Vocabulary:
    """Forms to ops, per framework, with the conventions that fill the gaps."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._spellings: dict[str, dict[str, Mapping[str, Any]]] = {
            fw: dict(forms) for fw, forms in (data.get("spellings") or {}).items()}
        self._facts = {name: OpFacts.from_data(name, facts) for name, facts in (data.get("ops") or {}).items()}
        self.modules: Mapping[str, Any] = data.get("modules") or {}
        #: names of a module's state that is no parameter (a batch norm's running statistics)
        self.buffers: frozenset[str] = frozenset(name for facts in self.modules.values()
                                                 for name in facts.get("buffers", ()))
        #: ops some framework's programs spell in its functional namespace (the activations)
        self._functional = frozenset(entry["op"] for forms in self._spellings.values()
                                     for form, entry in forms.items() if ".nn.functional." in form)

    def facts(self, op: str) -> OpFacts:
        return self._facts.get(op) or OpFacts(op)

    def knows(self, op: str) -> bool:
        return op in self._facts

    def lookup(self, framework: str, form: str, argument: str | None = None) -> OpUse | None:
        """The op *form* spells in *framework*'s code (its first argument after the tensor spelled as
        *argument*: ``forms.argument_kind``), or None when neither its programs nor the conventions say."""
        functional = form.startswith(f"fn:{framework}.nn.functional.")
        for candidate in self._candidates(framework, form):
            entry = self._spellings.get(framework, {}).get(candidate)
            if entry is None:
                continue
            other = (entry.get("by_argument") or {}).get(argument or "")
            op = other or entry["op"]
            if functional and candidate != form and op not in self._functional:
                continue  # F.unfold (im2col) is not Tensor.unfold: the functional namespace has its own ops
            return self._use({"op": other, "fields": {}} if other else entry)
        if form.startswith("method:"):  # x.mul_(y) in paddle 3: a method named as the op another framework spells
            for other in sorted(self._spellings):
                entry = self._spellings[other].get(form)
                if other != framework and entry is not None and entry["op"] == form[len("method:"):]:
                    return self._use(entry)
        return None

    def _use(self, entry: Mapping[str, Any]) -> OpUse:
        return OpUse(entry["op"], dict(entry.get("fields") or {}), self.facts(entry["op"]))

    def _candidates(self, framework: str, form: str) -> list[str]:
        out = [form]
        if form.endswith(OUT_SUFFIX):
            return out
        if form.endswith(INPLACE_SUFFIX):  # F.silu(x, inplace=True): that spelling's op, else the function's
            return out + self._candidates(framework, form.removesuffix(INPLACE_SUFFIX))
        functional = f"fn:{framework}.nn.functional."
        root = f"fn:{framework}."
        tensor_method = f"fn:{framework}.Tensor."
        if form.startswith(tensor_method):  # torch.Tensor.add_(x, y): the method, unbound
            name = form[len(tensor_method):]
            out += [f"method:{name}", root + name]
        elif form.startswith(functional):
            name = form[len(functional):]
            out += [root + name, f"method:{name}"]
        elif form.startswith(root) and "." not in form[len(root):]:
            name = form[len(root):]
            out += [functional + name, f"method:{name}"]
        elif form.startswith("method:"):
            name = form[len("method:"):]
            out += [root + name, functional + name]
        return out

