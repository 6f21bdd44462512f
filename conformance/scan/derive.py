"""What the scanner knows of the ops, derived from the catalogue: how each framework spells each op, and
what each op does to memory.

* **Spellings** come from the programs kept beside the committed results (``records/programs.py``): each
  step of each program is marked ``# step N: OP``, so the statement after the mark is how that framework's
  adapter spells OP.  Its form (``scan/forms.py``) becomes a key of the framework's vocabulary, with the
  fields that every spelling of that form shares (``nn.ReLU`` is the activation module of kind ``relu``).
* **Memory effects** come from the reference (``judge/model.py``): every case is interpreted step by step,
  and after each step the reference says whether a result is the argument itself, a view of it, an
  untracked alias (``detach``, ``.data``), an array or tensor on its memory, or new; which argument's
  memory the step wrote; and whether a result that came from a tensor requiring grad still requires it.
  The scanner's reading of an op can therefore never disagree with how the matrix judges it.
* **What backward reads** is declared on the op (``Op.saves``) and by an adapter whose framework differs
  (``Adapter.saves``): the reference computes from values as they were and has no such notion.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from conformance.scan.forms import Imports, argument_kind, statement_form

__all__ = ["spellings", "op_facts", "module_facts"]

_MARK = re.compile(r"^\s*# step (\d+): (\S+)")
#: Field values a form can carry (a module's kind, a flag); numbers and literals are the case's own.
_KEPT_FIELD_TYPES = (str, bool)


def spellings(programs: Iterable[Mapping[str, Any]], steps_of: Mapping[str, Mapping[int, Any]]
              ) -> dict[str, dict[str, dict[str, Any]]]:
    """framework -> form -> ``{"op": name, "fields": {...}}`` from the kept eager programs.

    A form several ops share (``method:view`` is a shape view and a dtype view) names the op that spells
    it most often; *steps_of* maps a case id to its steps by number (for their fields)."""
    seen: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    by_argument: dict[tuple[str, str], dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    fields: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for program in programs:
        if program.get("mode") != "eager" or program.get("unsupported"):
            continue
        steps = steps_of.get(program["case"])
        if steps is None:
            continue
        for number, op, statement, imports in _marked_statements(program["source"], steps):
            form = statement_form(statement, imports)
            if form is None:
                continue
            seen[program["framework"]][form][op] += 1
            fields[(program["framework"], form, op)].append(steps[number].fields)
            call = _call_of(statement)
            if call is not None:
                by_argument[(program["framework"], form)][argument_kind(call, imports)][op] += 1
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for framework, forms in sorted(seen.items()):
        table[framework] = {}
        for form, counts in sorted(forms.items()):
            op = _most(counts)
            entry: dict[str, Any] = {"op": op, "fields": _shared(fields[(framework, form, op)])}
            others = {kind: _most(ops) for kind, ops in sorted(by_argument.get((framework, form), {}).items())}
            others = {kind: other for kind, other in others.items() if other != op}
            if others:  # x.view(torch.int32) is a dtype view where x.view(2, 3) is a shape view
                entry["by_argument"] = others
            table[framework][form] = entry
    return table


def _most(counts: Counter) -> str:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]


def _call_of(statement: ast.stmt) -> ast.Call | None:
    value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
    return value if isinstance(value, ast.Call) else None


def _marked_statements(source: str, steps: Mapping[int, Any]) -> Iterable[tuple[int, str, ast.stmt, Imports]]:
    """(step number, op, statement, imports) for each step mark of *source*: the statement that binds the
    step's results, else the first one after the mark."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    imports = Imports.of(tree)
    marks: dict[int, tuple[int, str]] = {}
    for number, line in enumerate(source.splitlines(), 1):
        match = _MARK.match(line)
        if match:
            marks[number] = (int(match.group(1)), match.group(2))
    grouped: dict[int, list[ast.stmt]] = defaultdict(list)
    owner: dict[int, tuple[int, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            mark = max((line for line in marks if line < node.lineno), default=None)
            if mark is not None and not _between_marks(mark, node.lineno, marks):
                grouped[mark].append(node)
                owner[mark] = marks[mark]
    for mark, statements in sorted(grouped.items()):
        number, op = owner[mark]
        step = steps.get(number)
        if step is None or step.op != op:
            continue
        statements.sort(key=lambda s: (s.lineno, s.col_offset))
        outs = set(step.out)
        chosen = next((s for s in statements if outs & _bound_names(s)), statements[0])
        yield number, op, chosen, imports


def _between_marks(mark: int, line: int, marks: Mapping[int, Any]) -> bool:
    return any(mark < other < line for other in marks)


def _bound_names(statement: ast.stmt) -> set[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _shared(all_fields: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The str/bool fields every step spelled this way has with the same value."""
    if not all_fields:
        return {}
    first = {k: v for k, v in all_fields[0].items() if isinstance(v, _KEPT_FIELD_TYPES)}
    return {k: v for k, v in sorted(first.items()) if all(f.get(k) == v for f in all_fields[1:])}


# -- memory effects, from the reference ---------------------------------------------------------------


def op_facts(cases: Iterable[Any], ops: Mapping[str, Any], framework_saves: Mapping[str, Mapping[str, tuple]],
             no_backward: Mapping[str, frozenset[str]] | None = None) -> dict[str, dict[str, Any]]:
    """op -> ``returns`` (how a result relates to the arguments), ``writes`` (which arguments' memory a step
    wrote; ``relayout``: which it made look at other memory or in another order), ``tracked`` (whether such a
    write, of a tensor that requires grad in grad mode, gave it a history), ``keeps_grad`` (whether a result
    of a tensor requiring grad requires it), ``overlaps`` (whether a view it returned holds one element of
    memory more than once: an in-place write into it writes one place several times), ``fields`` (in order, and whether required), ``rebinds``,
    ``binds`` and ``saves`` per framework; ``no_backward``: the frameworks with no derivative for it."""
    from conformance.judge.reference import machine

    observed: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for case in cases:
        probe = machine(partial=True)
        _instrument(probe)
        _observe_steps(probe, case.steps, observed)
    facts: dict[str, dict[str, Any]] = {}
    for name, op in sorted(ops.items()):
        seen = observed.get(name, {})
        facts[name] = {
            "returns": sorted(seen.get("returns", ())),
            "writes": sorted(seen.get("writes", ())),
            "relayout": sorted(seen.get("relayout", ())),
            "keeps_grad": sorted(seen.get("keeps_grad", ())),
            "overlaps": bool(seen.get("overlaps")),
            "tracked": sorted(seen.get("tracked", ())),
            "fields": [[field_name, bool(field.required)] for field_name, field in op.fields.items()],
            "observed": name in observed,
            "rebinds": bool(op.rebinds),
            "binds": op.binds,
            "block": bool(op.block),
            "many": op.out == "many",
            "saves": {framework: list(overrides.get(name, op.saves)) for framework, overrides in
                      sorted(framework_saves.items())},
            "no_backward": sorted(fw for fw, names in (no_backward or {}).items() if name in names),
        }
    return facts


def _instrument(probe: Any) -> None:
    """Note every storage the reference writes into (a write of the values it already held is a write too)."""
    probe.written = []
    write = type(probe).write

    def noting(tensor: Any, value: Any, node: Any) -> None:
        probe.written.append(tensor.storage)
        write(probe, tensor, value, node)

    probe.write = noting


def _observe_steps(probe: Any, steps: Sequence[Any], observed: dict[str, dict[str, set]]) -> bool:
    """Run *steps* one at a time on *probe*, noting what each did; False once the reference stops."""
    from conformance.judge.model import Tensor

    for step in steps:
        op = probe.ops.get(step.op)
        if step.op == "observe" or op is None or op.block:
            try:
                if op is not None and op.block and step.steps:
                    if not _run_block(probe, step, observed):
                        return False
                else:
                    type(probe).run(probe, [step])
            except Exception:  # noqa: BLE001 - the reference refuses the rest of this case: what it did stands
                return False
            continue
        names = [a for a in step.args if isinstance(a, str)]
        into = step.fields.get("into")
        if isinstance(into, str):
            names.append(into)
        before: dict[str, tuple[Any, Any, Any, Any, bool]] = {}
        for name in names:
            try:
                value = probe.target(name)
            except (KeyError, AttributeError, TypeError):
                continue
            if isinstance(value, Tensor):
                owner = value.base or value
                before[name] = (value, value.storage, None, value.positions, value.requires_grad, owner._node)
        recording = probe.grad_enabled
        probe.written.clear()
        try:
            type(probe).run(probe, [step])
        except Exception:  # noqa: BLE001 - the reference refuses the rest of this case: what it did stands
            return False
        seen = observed[step.op]
        for name, (value, storage, data, positions, grad, node) in before.items():
            role = "into" if name == into else f"arg{step.args.index(name)}"
            if value.storage is not storage or value.positions is not positions and not (
                    value.positions.shape == positions.shape and (value.positions == positions).all()):
                seen["relayout"].add(role)
            elif any(written is value.storage for written in probe.written):
                seen["writes"].add(role)
            else:
                continue
            if recording and grad:  # did the write give the tensor a new history, as autograd records writes?
                seen["tracked"].add((value.base or value)._node is not node)
        grad_in = any(entry[4] for entry in before.values())
        for out in step.out:
            result = probe.env.get(out)
            if not isinstance(result, Tensor):
                continue
            relation = _relation(result, before)
            seen["returns"].add(relation)
            if relation == "view" and np.unique(result.positions).size < result.positions.size:
                seen["overlaps"].add(True)  # expand: several elements of the result are one place of memory
            if grad_in:
                seen["keeps_grad"].add(bool(result.requires_grad))
    return True


def _run_block(probe: Any, step: Any, observed: dict[str, dict[str, set]]) -> bool:
    """A block's own steps are observed as any other; the block itself runs through the reference."""
    inner: list[Any] = []

    def run(steps: Sequence[Any]) -> None:
        inner.append(_observe_steps(probe, steps, observed))

    probe.run = run  # the block's reference calls machine.run(step.steps); its steps run through type(probe).run
    try:
        probe.ops[step.op].reference(probe, step)
    finally:
        del probe.run
    return all(inner)


def _relation(result: Any, before: Mapping[str, tuple]) -> str:
    for value, storage, *_ in before.values():
        if result is value:
            return "self"
    for value, storage, *_ in before.values():
        if result.storage is value.storage:
            if result.kind != value.kind:
                return f"{value.kind}->{result.kind}"
            return "view" if result.base is not None else "untracked"
    return "new"


def module_facts(module_kinds: Mapping[str, Any], activations: Mapping[str, Any],
                 framework_saves: Mapping[str, Mapping[str, tuple]]) -> dict[str, Any]:
    """Each module kind: its parameters (and which of them are buffers, which require no grad), how many
    results a call binds, what a call's backward reads; an
    activation's by its function, out of place and in place (``inplace=True``)."""
    kinds: dict[str, Any] = {}
    for name, kind in sorted(module_kinds.items()):
        kinds[name] = {"parameters": list(kind.parameters), "buffers": list(kind.buffers), "outputs": kind.outputs,
                       "saves": {fw: list(kind.saves) for fw in sorted(framework_saves)}}
    kinds["activation"]["functions"] = {
        fn_name: {"op": fn_name,
                  "saves": {fw: list(overrides.get(fn_name, (fn.saves,) if fn.saves else ()))
                            for fw, overrides in sorted(framework_saves.items())},
                  "saves_in_place": {fw: list(overrides.get(fn_name + "_", fn.in_place_saves))
                                     for fw, overrides in sorted(framework_saves.items())}}
        for fn_name, fn in sorted(activations.items())}
    return kinds
