"""The case model: a framework-neutral program of steps, loaded and checked from YAML.

Every problem in a case file becomes a :class:`CaseError` naming the file, the
line and the problem; nothing here imports a framework.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import json
import keyword
import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import _yaml
from conformance.case.files import find_case_files
from conformance.case.index import parse_index
from conformance.case.model import GENERATED_SOURCE, MEASURED, Case, CaseError, Step, Tolerance, case_from_message
from conformance.ops import MODULE_KINDS, OBSERVATIONS, OPS, Op

# The case model's names are the loader's too: a loaded case is a Case (case/model.py).
__all__ = ["GENERATED_SOURCE", "Case", "CaseError", "Step", "Tolerance", "case_from_message", "check_case",
           "find_case_files", "load_case", "load_cases"]

ID_PATTERN = re.compile(r"[a-z][a-z0-9_]*\Z")
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
#: Names generated programs use themselves; each adapter adds its own (``torch``, ``nn``, ``F``...).
HARNESS_NAMES = frozenset({"np", "numpy", "DEVICE"})
#: How the ``source:`` of a case the differential fuzzer wrote begins (``conformance/fuzz/write.py``).
TOP_LEVEL = {"id", "title", "topic", "source", "description", "cause", "judged_against", "remedy", "no_remedy",
             "not_scanned", "varies_by_machine", "tolerance", "timeout",
             "expected", "steps"}
MAX_TIMEOUT = 3600.0
INT64 = (-(2 ** 63), 2 ** 63 - 1)
#: Characters an observation name may not hold: ``[`` starts the iteration suffix of a key.
OBSERVATION_NAME_FORBIDDEN = re.compile(r"[\[\]\x00-\x1f\x7f\u2028\u2029]")


@functools.lru_cache(maxsize=None)
def reserved_names() -> frozenset[str]:
    """Names a case may not bind: Python's builtins, the harness's, and every adapter's."""
    from conformance.adapter import adapter_classes

    names = set(dir(builtins)) | HARNESS_NAMES
    for cls in adapter_classes().values():
        names.update(cls.reserved_names)
    return frozenset(names)


def case_digest(data: Mapping[str, Any]) -> str:
    """``sha256:`` and 16 hex digits of the keys that decide what runs and how it is judged."""
    decisive = {key: data.get(key) for key in ("steps", "tolerance", "timeout")}
    if data.get("expected") is not None:  # values a case states itself judge it as the reference's do
        decisive["expected"] = data["expected"]
    blob = json.dumps(decisive, sort_keys=True, default=repr).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]


def load_case(path: Path | str, raw: bytes | None = None) -> Case:
    """Load and check one case file (*raw*: its bytes, where they were read already with
    ``_yaml.read_bounded``); raise CaseError on any problem."""
    path = Path(path)
    try:
        data, lines = _yaml.load(path, raw)
    except _yaml.LoadError as exc:
        raise CaseError(path, exc.line, exc.message) from None
    except OSError as exc:
        raise CaseError(path, 1, f"cannot read: {exc.strerror}") from None
    return _Checker(path, lines).case(data)


def load_cases(paths: Iterable[Path | str],
               load: Callable[[Path], Case] | None = None) -> tuple[list[Case], list[CaseError]]:
    """Load every case under *paths* (with *load*: :func:`load_case` by default); bad files become errors
    and the rest still load."""
    load = load or load_case
    cases: list[Case] = []
    errors: list[CaseError] = []
    seen: dict[str, Case] = {}
    for path in find_case_files(paths):
        try:
            case = load(path)
        except CaseError as exc:
            errors.append(exc)
            continue
        if case.id in seen:
            first = seen[case.id]
            errors.append(CaseError(path, case.line, f"duplicate case id {case.id!r}, "
                                    f"first defined at {first.path}:{first.line}"))
            continue
        seen[case.id] = case
        cases.append(case)
    return cases, errors


class _Checker:
    """Turns plain YAML data into a Case, checking names and types step by step."""

    def __init__(self, path: Path, lines: _yaml.Lines) -> None:
        self.path = path
        self.lines = lines
        self.counter = 0
        self.addresses: dict[str, int] = {}
        self.observation_names: dict[str, int] = {}
        self.loop_depth = 0

    def fail(self, where: tuple, message: str) -> CaseError:
        return CaseError(self.path, self.lines.of(where), message)

    def case(self, data: Any) -> Case:
        if not isinstance(data, dict):
            raise self.fail((), "a case file must be a mapping with 'id', 'title' and 'steps'")
        unknown = sorted(set(data) - TOP_LEVEL)
        if unknown:
            raise self.fail((unknown[0],), f"unknown top-level key {unknown[0]!r}; "
                            f"expected some of {sorted(TOP_LEVEL)}")
        for key in ("id", "title", "steps"):
            if key not in data:
                raise self.fail((), f"missing required key {key!r}")
        case_id = data["id"]
        if not isinstance(case_id, str) or not ID_PATTERN.match(case_id):
            raise self.fail(("id",), f"id {case_id!r} must be snake_case: lowercase letters, digits, '_'")
        for key in ("title", "topic", "source", "description", "cause", "judged_against", "no_remedy", "not_scanned",
                    "varies_by_machine"):
            if key in data and not isinstance(data[key], str):
                raise self.fail((key,), f"{key} must be a string, not {data[key]!r}")
        for key in ("cause", "judged_against", "no_remedy", "not_scanned", "varies_by_machine"):
            if key in data and (not data[key].strip() or "\n" in data[key].strip()):
                raise self.fail((key,), f"{key} must be one non-empty line, not {data[key]!r}")
        steps = self.steps(data["steps"], ("steps",), scope={})
        if not steps:
            raise self.fail(("steps",), "steps must not be empty")
        observed = {s.name: s.kind for step in steps for s in step.walk() if s.op == "observe"}
        # the bytes a measure_allocated block records: stated (expected:) as a whole number of bytes
        observed.update({s.fields["name"]: MEASURED for step in steps for s in step.walk()
                         if s.op == "measure_allocated"})
        if not observed:
            raise self.fail(("steps",), "the case observes nothing: add an 'observe' step")
        return Case(
            id=case_id,
            title=data["title"],
            topic=data.get("topic") or self.path.parent.name,
            path=str(self.path),
            line=self.lines.of(("id",)),
            steps=steps,
            raw=data,
            source=data.get("source", ""),
            description=data.get("description", ""),
            tolerance=self.tolerance(data.get("tolerance")),
            timeout=self.timeout(data),
            expected=self.expected(data.get("expected"), observed),
            cause=data.get("cause", "").strip(),
            judged_against=data.get("judged_against", "").strip(),
            remedy=self.remedy(data, case_id),
            no_remedy=data.get("no_remedy", "").strip(),
            not_scanned=data.get("not_scanned", "").strip(),
            varies_by_machine=data.get("varies_by_machine", "").strip(),
            lines=self.lines,
            digest=case_digest(data),
        )

    def remedy(self, data: dict, case_id: str) -> tuple[str, ...]:
        """The ids a case names as its safe spelling: whether they exist is a question of the catalogue
        (``conformance.report.remedies``), not of one file."""
        if "remedy" not in data:
            return ()
        if "no_remedy" in data:
            raise self.fail(("no_remedy",), "a case names a remedy or says why it has none, not both")
        value = data["remedy"]
        if not isinstance(value, list) or not value:
            raise self.fail(("remedy",), f"remedy must be a non-empty list of case ids, not {value!r}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not ID_PATTERN.match(item):
                raise self.fail(("remedy", i), f"remedy entries are case ids (snake_case), not {item!r}")
            if item == case_id:
                raise self.fail(("remedy", i), f"a case cannot be its own remedy ({item!r})")
            if item in value[:i]:
                raise self.fail(("remedy", i), f"remedy names {item!r} twice")
        return tuple(value)

    def tolerance(self, value: Any) -> Tolerance | None:
        if value is None:
            return None
        if not isinstance(value, dict) or set(value) - {"rtol", "atol"}:
            raise self.fail(("tolerance",), "tolerance must be a mapping with 'rtol' and/or 'atol'")
        rtol = self.positive_number(value, "rtol", ("tolerance", "rtol"), zero_ok=True)
        atol = self.positive_number(value, "atol", ("tolerance", "atol"), zero_ok=True)
        for key, given in (("rtol", rtol), ("atol", atol)):
            if given is not None and not math.isfinite(given):  # .inf would pass every value: no verdict at all
                raise self.fail(("tolerance", key), f"{key} must be a finite number, not {given!r}")
        if rtol is not None and rtol >= 1.0:  # within 100% of the reference: 0 and the sign flipped would pass
            raise self.fail(("tolerance", "rtol"), f"rtol must be below 1 (a fraction of the reference), not {rtol!r}")
        return Tolerance(rtol=1e-5 if rtol is None else rtol, atol=1e-6 if atol is None else atol)

    def timeout(self, data: dict) -> float | None:
        value = self.positive_number(data, "timeout", ("timeout",))
        if value is not None and value > MAX_TIMEOUT:
            raise self.fail(("timeout",), f"timeout must be at most {MAX_TIMEOUT:g} seconds, not {value!r}")
        return value

    def positive_number(self, data: dict, key: str, where: tuple, zero_ok: bool = False) -> float | None:
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or (
                value == 0 and not zero_ok):
            raise self.fail(where, f"{key} must be a positive number, not {value!r}")
        return float(value)

    def expected(self, value: Any, observed: Mapping[str, str]) -> Mapping[str, Any] | None:
        """What the case states an observation should be: values for a value or a gradient, an integer
        for a counter (``version``) or for the bytes a ``measure_allocated`` block allocates, true or false
        for a property (``is_leaf``, ``same_object``, ...).
        Memory observations decide aliases or copies themselves and take no expectation."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(("expected",), "expected must map observation names to values")
        for name, item in value.items():
            if name not in observed:
                raise self.fail(("expected", name), f"expected value for {name!r}, which no step observes")
            where = ("expected", name)
            if observed[name] == MEASURED:
                if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                    raise self.fail(where, f"the bytes a measure_allocated block allocates are a whole number "
                                           f"(0 or more), not {item!r}")
                continue
            spec = OBSERVATIONS[observed[name]]
            if spec.memory or spec.reads in ("overlap", "address"):
                raise self.fail(where, f"a {spec.name} observation decides aliases or copies itself; it takes "
                                       f"no expected value")
            if spec.reads == "bool" and not isinstance(item, bool):
                raise self.fail(where, f"a {spec.name} observation is true or false, not {item!r}")
            if spec.reads == "int" and (isinstance(item, bool) or not isinstance(item, int)):
                raise self.fail(where, f"a {spec.name} observation is an integer, not {item!r}")
            if spec.reads == "array" and item is not None:
                self.numbers(item, where, "expected value")
        return value

    # -- steps ---------------------------------------------------------------------

    def steps(self, value: Any, where: tuple, scope: dict[str, str]) -> tuple[Step, ...]:
        if not isinstance(value, list):
            raise self.fail(where, "steps must be a list")
        return tuple(self.step(item, where + (i,), scope) for i, item in enumerate(value))

    def step(self, data: Any, where: tuple, scope: dict[str, str]) -> Step:
        if not isinstance(data, dict):
            raise self.fail(where, f"a step must be a mapping with 'op' or 'observe', not {data!r}")
        self.counter += 1
        number = self.counter
        line = self.lines.of(where)
        if "observe" in data:
            return self.observation(data, where, scope, number, line)
        if "op" not in data:
            raise self.fail(where, "a step needs an 'op' (or an 'observe') key")
        op = data["op"]
        if not isinstance(op, str) or op not in OPS:
            close = sorted(name for name in OPS if isinstance(op, str) and name.startswith(op[:3]))
            hint = f"; did you mean one of {close}?" if close else ""
            raise self.fail(where + ("op",), f"unknown op {op!r}{hint}")
        spec = OPS[op]
        allowed = {"op", "args", "out"} | set(spec.fields)
        extra = sorted(set(data) - allowed)
        if extra:
            raise self.fail(where + (extra[0],), f"op {op!r} takes no field {extra[0]!r}; "
                            f"fields: {sorted(allowed - {'op'})}")
        args = self.args(spec, data.get("args", []), where, scope)
        fields = self.fields(spec, data, where, scope)
        index = None
        if "index" in spec.fields and data.get("index") is not None:  # optional in augmented assignment
            try:
                index = parse_index(data["index"])
            except ValueError as exc:
                raise self.fail(where + ("index",), str(exc)) from None
            for var in index.variables():
                if scope.get(var) != "counter":
                    raise self.fail(where + ("index",), f"index uses {var!r}, which is not a loop counter")
        inner: tuple[Step, ...] = ()
        if spec.block:
            inner_scope = dict(scope)
            if fields.get("var"):
                if fields["var"] in scope:
                    raise self.fail(where + ("var",), f"loop counter {fields['var']!r} would shadow "
                                    f"the {scope[fields['var']]} of that name")
                inner_scope[fields["var"]] = "counter"
            self.loop_depth += spec.loop
            try:
                inner = self.steps(data["steps"], where + ("steps",), inner_scope)
            finally:
                self.loop_depth -= spec.loop
            scope.update({k: v for k, v in inner_scope.items() if v != "counter"})
        if spec.check is not None:
            spec.check(data, scope, lambda message: self.fail(where + ("out",), message))
        out = self.out(spec, data.get("out"), where, scope, args)
        return Step(op=op, line=line, number=number, args=args, out=out, fields=fields,
                    steps=inner, index=index)

    def args(self, spec: Op, value: Any, where: tuple, scope: dict[str, str]) -> tuple[Any, ...]:
        if not isinstance(value, list):
            value = [value]
        kinds = list(spec.args)
        if kinds and kinds[-1].startswith("*"):
            variadic = kinds.pop()[1:]
            if len(value) < len(kinds) + 1:
                raise self.fail(where + ("args",), f"op {spec.name!r} takes at least "
                                f"{len(kinds) + 1} argument(s), got {len(value)}")
            kinds += [variadic] * (len(value) - len(kinds))
        elif len(value) != len(kinds):
            raise self.fail(where + ("args",), f"op {spec.name!r} takes {len(kinds)} argument(s), "
                            f"got {len(value)}")
        return tuple(self.arg(kind, item, where + ("args", i), scope)
                     for i, (kind, item) in enumerate(zip(kinds, value)))

    def arg(self, kind: str, value: Any, where: tuple, scope: dict[str, str]) -> Any:
        if kind in ("operand", "value") and isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        if not isinstance(value, str):
            raise self.fail(where, f"argument {value!r} must be the name of a {kind}")
        bound = scope.get(value)
        if bound is None:
            raise self.fail(where, f"name {value!r} is not defined by an earlier step")
        if kind in ("operand", "value") and bound == "counter":  # a loop counter: the Python int of the iteration
            return value
        accepted = {
            "tensor": {"tensor"},
            "operand": {"tensor"},
            "value": {"tensor", "array"},  # what index assignment takes: a NumPy array too
            "array": {"array"},
            "data": {"tensor", "array"},
            "module": set(MODULE_KINDS),
            "optimizer": {"optimizer"},
            "any": {"tensor", "array", "optimizer"} | set(MODULE_KINDS),
        }[kind]
        if bound not in accepted:
            raise self.fail(where, f"{value!r} is a {bound}, but this argument takes a {kind}")
        return value

    def fields(self, spec: Op, data: dict, where: tuple, scope: dict[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, fspec in spec.fields.items():
            at = where + (name,)
            if name not in data:
                if fspec.required:
                    raise self.fail(where, f"op {spec.name!r} needs the field {name!r}")
                out[name] = fspec.default
                continue
            value = data[name]
            if fspec.type == "numbers":
                self.numbers(value, at, name)
            elif fspec.type in ("dtype", "choice"):
                if value not in fspec.choices:
                    raise self.fail(at, f"{name} must be one of {list(fspec.choices)}, not {value!r}")
            elif fspec.type == "bool":
                if not isinstance(value, bool):
                    raise self.fail(at, f"{name} must be true or false, not {value!r}")
            elif fspec.type == "ints":
                if not isinstance(value, list) or not value or any(
                        isinstance(v, bool) or not isinstance(v, int) or not -64 <= v < 64 for v in value):
                    raise self.fail(at, f"{name} must be a non-empty list of small integers (dimensions), "
                                    f"not {value!r}")
            elif fspec.type == "int":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise self.fail(at, f"{name} must be a positive integer, not {value!r}")
            elif fspec.type == "number":
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.fail(at, f"{name} must be a number, not {value!r}")
            elif fspec.type == "name":
                if name == "var":
                    self.new_name(value, at)
                elif not isinstance(value, str) or scope.get(value) != "tensor":
                    raise self.fail(at, f"{name} must name a tensor defined by an earlier step, "
                                    f"not {value!r}")
            elif fspec.type == "observation":
                self.observation_name(value, at, self.lines.of(at))
            elif fspec.type == "str":
                if not isinstance(value, str) or not value:
                    raise self.fail(at, f"{name} must be a non-empty string, not {value!r}")
            out[name] = value
        return out

    def numbers(self, value: Any, where: tuple, what: str, depth: int = 0) -> None:
        """A number or a rectangular nested list of numbers."""
        if isinstance(value, int) and not isinstance(value, bool):
            if not INT64[0] <= value <= INT64[1]:
                raise self.fail(where, f"{what}: integer {value} is outside the int64 range; "
                                "write it as a float (e.g. 1.0e+30) if that is meant")
            return
        if isinstance(value, float):
            return
        if not isinstance(value, list) or not value:
            raise self.fail(where, f"{what} must be a number or a non-empty (nested) list of numbers, "
                            f"not {value!r}{_number_as_text(value)}")
        shapes = set()
        for i, item in enumerate(value):
            self.numbers(item, where + (i,), what, depth + 1)
            shapes.add(_shape(item))
        if len(shapes) > 1:
            raise self.fail(where, f"{what} is not rectangular: rows of shapes {sorted(shapes)}")

    def out(self, spec: Op, value: Any, where: tuple, scope: dict[str, str],
            args: tuple) -> tuple[str, ...]:
        at = where + ("out",)
        if value is None:
            if spec.out in ("required", "many"):
                raise self.fail(where, f"op {spec.name!r} needs an 'out' name")
            return ()
        if spec.out == "none":
            raise self.fail(at, f"op {spec.name!r} binds no name; remove 'out'")
        names = value if isinstance(value, list) else [value]
        if spec.out != "many" and len(names) != 1:
            raise self.fail(at, f"op {spec.name!r} binds one name, got {value!r}")
        for name in names:
            self.new_name(name, at)
            if scope.get(name) == "counter":
                raise self.fail(at, f"{name!r} is a loop counter here; bind another name")
        binds = spec.binds
        if binds == "same":
            binds = scope[args[0]]
        for name in names:
            scope[name] = binds
        return tuple(names)

    def new_name(self, name: Any, where: tuple) -> None:
        if not isinstance(name, str) or not NAME_PATTERN.match(name) or keyword.iskeyword(name):
            raise self.fail(where, f"{name!r} is not a valid name (letters, digits, '_', "
                            "starting with a letter)")
        if name in reserved_names():
            raise self.fail(where, f"{name!r} is reserved; choose another name")

    def observation(self, data: dict, where: tuple, scope: dict[str, str], number: int,
                    line: int) -> Step:
        extra = sorted(set(data) - {"observe", "of", "name", "since", "judge"})
        if extra:
            raise self.fail(where + (extra[0],), f"an observation takes 'observe', 'of', 'name', "
                            f"'since' and 'judge', not {extra[0]!r}")
        kind = data["observe"]
        if not isinstance(kind, str) or kind not in OBSERVATIONS:
            raise self.fail(where + ("observe",), f"unknown observation {kind!r}; "
                            f"expected one of {list(OBSERVATIONS)}")
        spec = OBSERVATIONS[kind]
        targets = data.get("of")
        targets = targets if isinstance(targets, list) else [targets]
        if len(targets) != spec.targets:
            raise self.fail(where + ("of",), f"observe {kind} takes {spec.targets} name(s) in 'of', "
                            f"got {data.get('of')!r}")
        for target in targets:
            self.target(target, where + ("of",), scope, kind)
        name = data.get("name") or f"{kind}({', '.join(targets)})"
        self.observation_name(name, where + ("name",) if "name" in data else where, line)
        judge = data.get("judge", True)
        if not isinstance(judge, bool):
            raise self.fail(where + ("judge",), f"judge must be true or false, not {judge!r}")
        if "judge" in data and not spec.judged:
            raise self.fail(where + ("judge",), f"a {kind} observation is never judged; remove 'judge'")
        if spec.reads == "address" and self.loop_depth:
            raise self.fail(where, f"an {kind!r} observation cannot be inside a repeat: "
                            "a later comparison needs one recorded address")
        since = data.get("since")
        if spec.since != ("since" in data):
            raise self.fail(where, "'since' (the name of an earlier 'address' observation) goes with "
                            f"the observations {[n for n, o in OBSERVATIONS.items() if o.since]}, and only there")
        if since is not None and (not isinstance(since, str) or self.addresses.get(since) is None):
            raise self.fail(where + ("since",), f"since {since!r} names no earlier 'address' observation")
        if spec.reads == "address":
            self.addresses[name] = number
        return Step(op="observe", line=line, number=number, kind=kind, of=tuple(targets), name=name,
                    fields={"since": since} if since else {}, judged=spec.judged and judge)

    def observation_name(self, name: Any, where: tuple, line: int) -> None:
        """Observation names are recorded keys: unique, and free of the ``[`` that marks iterations."""
        if not isinstance(name, str) or not name:
            raise self.fail(where, f"an observation name must be a non-empty string, not {name!r}")
        bad = OBSERVATION_NAME_FORBIDDEN.search(name)
        if bad:
            raise self.fail(where, f"observation name {name!r} may not contain {bad.group(0)!r} "
                            "('[...]' marks the iteration of an observation inside a repeat)")
        if name in self.observation_names:
            raise self.fail(where, f"observation name {name!r} is already used on line "
                            f"{self.observation_names[name]}; give this one a distinct 'name:'")
        self.observation_names[name] = line

    def target(self, target: Any, where: tuple, scope: dict[str, str], kind: str) -> None:
        if not isinstance(target, str):
            raise self.fail(where, f"'of' must name what to observe, not {target!r}")
        base, _, param = target.partition(".")
        bound = scope.get(base)
        if bound is None:
            raise self.fail(where, f"name {base!r} is not defined by an earlier step")
        if param:
            if bound not in MODULE_KINDS or param not in MODULE_KINDS[bound].parameters:
                raise self.fail(where, f"{target!r}: a {bound} has no parameter {param!r}")
        elif bound not in ("tensor", "array"):
            raise self.fail(where, f"cannot observe {kind} of {target!r}, a {bound}")
        elif bound == "array" and not OBSERVATIONS[kind].arrays:
            raise self.fail(where, f"a NumPy array has no {kind}")
        elif bound == "tensor" and not OBSERVATIONS[kind].tensors:
            raise self.fail(where, f"{kind} is a NumPy array's; {target!r} is a tensor")


def _number_as_text(value: Any) -> str:
    """A hint for a number YAML reads as text: YAML 1.1 wants a dot and a signed exponent (``1.0e+30``)."""
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    return " (YAML reads this number as text: write it with a dot and a signed exponent, e.g. 1.0e+30)"


def _shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, list):
        return (len(value),) + _shape(value[0])
    return ()


def check_case(data: Any, path: Path | str) -> Case:
    """Check plain case data as if read from *path* (CaseError on any problem; every line reads as 1)."""
    return _Checker(Path(path), _yaml.Lines()).case(data)
