"""The JSON Schema of a case file, built from the op table.

The schema is derived from :data:`conformance.ops.OPS` and
:data:`conformance.ops.OBSERVATIONS`, so adding an op needs no schema edit;
``python -m conformance.case.schema > conformance/case/schema.json`` regenerates the
committed copy that editors and other tools read.  The schema checks structure
only (keys, kinds, counts, literal types); whether names are defined, values
rectangular, or the case observes anything is left to :func:`conformance.case.load_case`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from conformance.case.load import ID_PATTERN, NAME_PATTERN, TOP_LEVEL
from conformance.ops import MODULE_KINDS, OBSERVATIONS, OPS, Field, Op

__all__ = ["build_schema", "main"]

Schema = dict[str, Any]

_NAME = "^" + NAME_PATTERN.pattern.removesuffix(r"\Z") + "$"
_ID = "^" + ID_PATTERN.pattern.removesuffix(r"\Z") + "$"
_NAME_CHARS = _NAME[1:-1]
# One index item as conformance.index.parse_index reads it: integer, loop variable, slice, ..., None, or a list.
_BOUND = r"\s*(?:-?\d+)?\s*"
_INDEX_LIST = r"\[\s*-?\d+\s*(?:,\s*-?\d+\s*)*\]"  # advanced indexing: a list of integers
_INDEX_BOOLS = r"\[\s*(?:True|False)\s*(?:,\s*(?:True|False)\s*)*\]"  # or of booleans
_INDEX_ITEM = rf"\s*(?:-?\d+|{_NAME_CHARS}|{_BOUND}(?::{_BOUND}){{1,2}}|\.\.\.|{_INDEX_LIST}|{_INDEX_BOOLS})\s*"
_INDEX = rf"^{_INDEX_ITEM}(?:,{_INDEX_ITEM})*$"


def _ref(name: str) -> Schema:
    return {"$ref": f"#/$defs/{name}"}


def _field(spec: Field) -> Schema:
    """The schema of one keyword field, by its type name in the op table."""
    if spec.type in ("dtype", "choice"):
        return {"enum": list(spec.choices)}
    simple: dict[str, Schema] = {
        "numbers": _ref("numbers"),
        "bool": {"type": "boolean"},
        "int": {"type": "integer", "minimum": 1},
        "ints": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": -64, "maximum": 63}},
        "number": {"type": "number"},
        "index": _ref("index"),
        "name": _ref("name"),
        "steps": _ref("steps"),
        "str": {"type": "string", "minLength": 1},
        "observation": _ref("observation_name"),
    }
    if spec.type not in simple:  # a new field type must be taught here, not silently accepted
        raise ValueError(f"no schema for field type {spec.type!r}")
    return simple[spec.type]


def _args(spec: Op) -> Schema:
    """Positional arguments: a list of the right kinds; a lone argument may be given bare."""
    kinds = list(spec.args)
    variadic = kinds.pop()[1:] if kinds and kinds[-1].startswith("*") else ""

    def item(kind: str) -> Schema:
        return {"anyOf": [_ref("name"), {"type": "number"}]} if kind in ("operand", "value") else _ref("name")

    as_list: Schema = {"type": "array", "minItems": len(kinds) + bool(variadic)}
    if kinds:
        as_list["prefixItems"] = [item(kind) for kind in kinds]
    if variadic:
        as_list["items"] = item(variadic)
    else:
        as_list["maxItems"] = len(kinds)
    if as_list["minItems"] != 1:
        return as_list
    return {"anyOf": [as_list, item((kinds or [variadic])[0])]}


def _out(spec: Op) -> Schema:
    """Output names: one name (also as a one-item list), or a list for ``many``."""
    if spec.out == "many":
        return {"anyOf": [_ref("name"), {"type": "array", "minItems": 1, "items": _ref("name")}]}
    return {"anyOf": [_ref("name"), {"type": "array", "minItems": 1, "maxItems": 1,
                                     "items": _ref("name")}]}


def _op_rule(spec: Op) -> Schema:
    """``if op is X then`` the fields X takes, the ones it needs, and nothing else."""
    properties: Schema = {"op": {"const": spec.name}}
    required = ["op"]
    if spec.args:
        properties["args"] = _args(spec)
        required.append("args")
    else:
        properties["args"] = {"type": "array", "maxItems": 0}
    if spec.out != "none":
        properties["out"] = _out(spec)
        if spec.out in ("required", "many"):
            required.append("out")
    for name, field in spec.fields.items():
        properties[name] = _field(field)
        if field.required:
            required.append(name)
    return {
        "if": {"properties": {"op": {"const": spec.name}}, "required": ["op"]},
        "then": {"description": spec.doc, "properties": properties, "required": required,
                 "additionalProperties": False},
    }


def _observation() -> Schema:
    """An observation step: its kind decides how many names ``of`` takes; ``same_storage`` a ``since``."""
    modules = sorted({p for kind in MODULE_KINDS.values() for p in kind.parameters})
    target = {"type": "string", "pattern": rf"^{_NAME_CHARS}(?:\.(?:{'|'.join(modules)}))?$"}
    rules: list[Schema] = []
    for count in sorted({spec.targets for spec in OBSERVATIONS.values()}):
        kinds = sorted(name for name, spec in OBSERVATIONS.items() if spec.targets == count)
        of = target if count == 1 else {"type": "array", "minItems": count, "maxItems": count, "items": target}
        if count == 1:
            of = {"anyOf": [target, {"type": "array", "minItems": 1, "maxItems": 1, "items": target}]}
        rules.append({"if": {"properties": {"observe": {"enum": kinds}}},
                      "then": {"properties": {"of": of}}})
    rules.append({
        "if": {"properties": {"observe": {"enum": sorted(n for n, o in OBSERVATIONS.items() if o.since)}}},
        "then": {"required": ["since"]},
        "else": {"not": {"required": ["since"]}},
    })
    rules.append({
        "if": {"properties": {"observe": {"enum": sorted(n for n, o in OBSERVATIONS.items() if not o.judged)}}},
        "then": {"not": {"required": ["judge"]}},
    })
    return {
        "type": "object",
        "required": ["observe", "of"],
        "properties": {
            "observe": {"enum": list(OBSERVATIONS)},
            "of": {"anyOf": [target, {"type": "array", "minItems": 1, "items": target}]},
            "name": _ref("observation_name"),
            "since": {"type": "string"},
            "judge": {"type": "boolean"},
        },
        "additionalProperties": False,
        "allOf": rules,
    }


def _top_level() -> Schema:
    properties: Schema = {
        "id": {"type": "string", "pattern": _ID},
        "title": {"type": "string"},
        "topic": {"type": "string"},
        "source": {"type": "string"},
        "description": {"type": "string"},
        "cause": {"type": "string", "minLength": 1, "pattern": r"^[^\n]*\S[^\n]*\n?$"},
        "remedy": {"type": "array", "minItems": 1, "uniqueItems": True,
                   "items": {"type": "string", "pattern": _ID}},
        "no_remedy": {"type": "string", "minLength": 1, "pattern": r"^[^\n]*\S[^\n]*\n?$"},
        "judged_against": {"type": "string", "minLength": 1, "pattern": r"^[^\n]*\S[^\n]*\n?$",
                           "description": "whose documented behaviour the reference follows for this case, where it "
                                          "is a convention rather than arithmetic: a silent-wrong cell means 'differs "
                                          "from it'"},
        "not_scanned": {"type": "string", "minLength": 1, "pattern": r"^[^\n]*\S[^\n]*\n?$"},
        "varies_by_machine": {"type": "string", "minLength": 1, "pattern": r"^[^\n]*\S[^\n]*\n?$",
                              "description": "why the value a framework computes depends on the machine's "
                                             "kernels (a CPU's BLAS), not on the framework's version: a "
                                             "baseline takes silent-correct and silent-wrong of the case "
                                             "for the same behaviour"},
        "tolerance": {
            "type": "object",
            "properties": {"rtol": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                           "atol": {"type": "number", "minimum": 0}},
            "additionalProperties": False,
        },
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "expected": {"type": "object",
                     "description": "what an observation should be: values (a value, a gradient), an integer "
                                    "(a version counter), true or false (a property such as is_leaf)",
                     "additionalProperties": {"anyOf": [_ref("numbers"), {"type": "null"}, {"type": "boolean"}]}},
        "steps": {"allOf": [_ref("steps"), {"minItems": 1}]},
    }
    if set(properties) != TOP_LEVEL:  # case.py grew a key: describe it here
        raise ValueError(f"top-level keys differ from case.TOP_LEVEL: {sorted(set(properties) ^ TOP_LEVEL)}")
    return properties


def build_schema() -> Schema:
    """The draft 2020-12 schema of one case file."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:inplace-conformance:case",
        "title": "Conformance case",
        "description": "A framework-neutral program of steps and observations "
                       "(generated by conformance.case.schema; do not edit).",
        "type": "object",
        "required": ["id", "title", "steps"],
        "properties": _top_level(),
        "not": {"required": ["remedy", "no_remedy"]},
        "additionalProperties": False,
        "$defs": {
            "name": {"type": "string", "pattern": _NAME},
            "numbers": {"anyOf": [{"type": "number"},
                                  {"type": "array", "minItems": 1, "items": _ref("numbers")}]},
            "index": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": _INDEX}]},
            "observation_name": {"type": "string", "minLength": 1, "pattern": r"^[^\[\]\x00-\x1f\x7f\u2028\u2029]+$"},
            "steps": {"type": "array", "items": _ref("step")},
            "step": {
                "if": {"type": "object", "required": ["observe"]},
                "then": _ref("observation"),
                "else": _ref("op_step"),
            },
            "observation": _observation(),
            "op_step": {
                "type": "object",
                "required": ["op"],
                "properties": {"op": {"enum": sorted(OPS)}},
                "allOf": [_op_rule(OPS[name]) for name in sorted(OPS)],
            },
        },
    }


def main() -> int:
    """Print the schema as committed: 2-space indent, sorted keys, trailing newline."""
    sys.stdout.write(json.dumps(build_schema(), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
