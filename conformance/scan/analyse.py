"""One file, read: its framework, its classes and functions, and a trace of each (``scan/interpret.py``),
then every rule's sightings in them (``scan/rules.py``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterable

from conformance.scan.events import Trace, Write
from conformance.scan.forms import Imports, call_form
from conformance.scan.context import ClassInfo, FileContext
from conformance.scan.interpret import Interpreter
from conformance.scan.model import Module, Value
from conformance.scan.rules import RULES, Sighting
from conformance.scan.vocabulary import FRAMEWORKS, Vocabulary

__all__ = ["FileReading", "read_source"]


@dataclass
class FileReading:
    """What one file holds for the scanner: its framework (None: it imports neither), its sightings, or why
    it could not be read."""

    path: str
    framework: str | None
    sightings: list[Sighting] = field(default_factory=list)
    #: each sighting's compiled mode (``compile``, ``to_static`` ...), or None for eager code
    modes: dict[int, str | None] = field(default_factory=dict)
    error: str | None = None
    lines: int = 0
    #: what the file calls (``forms.call_form``) and the op attributes it reads (``attr:T``): among cases that
    #: match a sighting equally, the one whose program calls what the file calls is the likelier
    forms: frozenset[str] = frozenset()


def read_source(text: str, path: str, vocabulary: Vocabulary, framework: str | None = None) -> FileReading:
    """Read *text* (the source of *path*); *framework*: the one the code is written for when the caller knows
    (else the one it imports)."""
    reading = FileReading(path, None, lines=text.count("\n") + 1)
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as exc:
        reading.error = f"cannot parse: {getattr(exc, 'msg', None) or exc} (line {getattr(exc, 'lineno', '?')})"
        return reading
    nodes = list(ast.walk(tree))  # one walk: imports, classes, functions and compiler calls are all read from it
    imports = Imports()
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.add(node)
    imported = [fw for fw in FRAMEWORKS if fw in imports.roots()]
    if framework is not None and framework not in imported:
        return reading
    chosen = framework or (imported[0] if imported else None)
    if chosen is None:
        return reading
    reading.framework = chosen
    # what it calls, and the attributes it reads that spell an op (x.T, x.H): an attribute view is chosen
    # by the same likeness as a call
    attributes = {f"attr:{n.attr}" for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    reading.forms = frozenset(call_form(n, imports) for n in nodes if isinstance(n, ast.Call)) | frozenset(
        form for form in attributes if vocabulary.lookup(chosen, form) is not None)
    context = _context(tree, nodes, imports, vocabulary, chosen)
    seen: set[tuple[str, int, int]] = set()
    for trace in _traces(tree, nodes, context):
        for rule in RULES:
            for sighting in rule.find(trace):
                key = (sighting.code, sighting.line, sighting.column)
                if key in seen:
                    continue
                seen.add(key)
                reading.sightings.append(sighting)
                reading.modes[id(sighting)] = trace.compiled
    return reading


def _context(tree: ast.Module, nodes: list[ast.AST], imports: Imports, vocabulary: Vocabulary,
             framework: str) -> FileContext:
    classes: dict[str, ClassInfo] = {}
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            bases = tuple(imports.qualify(b) or (b.id if isinstance(b, ast.Name) else ast.unparse(b))
                          for b in node.bases)
            info = ClassInfo(node, bases)
            info.methods = {f.name: f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            classes[node.name] = info
    _inherit(classes)
    functions = {f.name: f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    context = FileContext(framework, imports, vocabulary, classes, functions, _compiled(nodes, imports))
    context.summaries = {name: list(_summary(context, function)) for name, function in functions.items()}
    return context


def _inherit(classes: dict[str, ClassInfo]) -> None:
    """A class of the file that derives from a module class of the file is a module too."""
    for _ in range(len(classes)):
        changed = False
        for info in classes.values():
            for base in info.bases:
                parent = classes.get(base.rsplit(".", 1)[-1])
                if parent is not None and parent is not info and parent.bases and not set(parent.bases) <= set(
                        info.bases):
                    info.bases = info.bases + parent.bases
                    changed = True
        if not changed:
            return


def _compiled(nodes: list[ast.AST], imports: Imports) -> dict[str, str]:
    """Functions of the file compiled by the framework: decorated, or passed to the compiler by name."""
    modes: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                mode = _compile_mode(decorator, imports)
                if mode:
                    modes[node.name] = mode
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            mode = _compile_mode(node, imports)
            if mode:
                modes[node.args[0].id] = mode
    return modes


def _compile_mode(expr: ast.expr, imports: Imports) -> str | None:
    call = expr if isinstance(expr, ast.Call) else None
    qualified = imports.qualify(call.func if call is not None else expr) or ""
    if qualified == "torch.compile":
        return "compile"
    if qualified.endswith("jit.to_static") and qualified.startswith("paddle"):
        full = call is not None and any(k.arg == "full_graph" and isinstance(k.value, ast.Constant)
                                        and k.value.value is True for k in call.keywords)
        return "to_static_full_graph" if full else "to_static"
    return None


def _summary(context: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterable[tuple[int, Write]]:
    """The writes a function of the file makes into its own arguments, by argument position."""
    interpreter = Interpreter(context, compiled=context.compiled.get(function.name), summarising=True)
    trace = interpreter.run_function(function)
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    for write in trace.writes:
        argument = next((v.argument for v in write.target.chain() if v.argument), None)
        if argument in names:
            yield names.index(argument), write


def _traces(tree: ast.Module, nodes: list[ast.AST], context: FileContext) -> Iterable[Trace]:
    yield Interpreter(context).run_module(tree)
    owners: dict[ast.AST, ClassInfo] = {}
    for info in context.classes.values():
        for method in info.methods.values():
            owners[method] = info
    instances: dict[int, tuple[Value, dict]] = {}
    for node in nodes:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        owner = owners.get(node)
        interpreter = Interpreter(context, compiled=context.compiled.get(node.name))
        instance = None
        if owner is not None:
            if id(owner) not in instances:
                instances[id(owner)] = _instance(context, owner)
            instance, attributes = instances[id(owner)]
            interpreter.attributes = _fresh_attributes(attributes)
        yield interpreter.run_function(node, owner, instance)


def _instance(context: FileContext, owner: ClassInfo) -> tuple[Value, dict]:
    """``self`` as the class's ``__init__`` leaves it (the modules, parameters and buffers it assigns), read
    once per class."""
    value = Value(kind="module" if owner.is_module else "object", module=Module(None) if owner.is_module else None)
    builder = Interpreter(context, summarising=True)
    init = owner.methods.get("__init__")
    if init is not None:
        builder.run_function(init, owner, value)
    return value, builder.attributes


def _fresh_attributes(attributes: dict) -> dict:
    """The attributes ``__init__`` set, for one method's reading: what another method saved or relaid out is
    that method's own."""
    for value in attributes.values():
        if isinstance(value, Value) and value.memory is not None:
            value.memory.saved.clear()
            value.memory.relaid = None
    return dict(attributes)
