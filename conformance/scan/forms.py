"""How a statement or expression spells an op, as a *form*: the key the scanner's vocabulary is indexed by.

A form is a short string that names what the code calls, resolved through its imports, not the names the
code happens to bind: ``fn:torch.nn.functional.relu`` (a function, however ``F`` was imported),
``method:add_`` (a method of whatever receiver), ``binop:Mult``, ``aug:Add`` (``x += y``), ``aug-data:Mult``
(``x.data *= 3``), ``setitem``, ``getitem``, ``attr:data``, ``setattr:data``, ``compare:Gt``, ``assign``,
``with:torch.no_grad``, ``for``.  The same functions read the catalogue's kept programs (to learn how each
framework spells each op, ``scan/derive.py``) and the user's code, so the two always agree.
"""

from __future__ import annotations

import ast
from typing import Any, Sequence
__all__ = ["Imports", "advanced_index", "argument_kind", "argument_node", "call_form", "constant", "name_of",
           "positional", "statement_form", "INPLACE_SUFFIX", "OUT_SUFFIX"]

#: Appended to a function's form when the call passes ``out=`` (``torch.add(a, b, out=c)`` is another op).
OUT_SUFFIX = "+out"
#: Appended to a function's form when the call passes ``inplace=True`` (``F.silu(x, inplace=True)`` is
#: ``silu_``, where the framework has no function of that name).
INPLACE_SUFFIX = "+inplace"


class Imports:
    """Which local names stand for which modules or objects: ``F`` -> ``torch.nn.functional``."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:  # `import torch.nn` binds `torch`
                    root = alias.name.split(".")[0]
                    self.names[root] = root
        elif node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    @classmethod
    def of(cls, tree: ast.AST) -> "Imports":
        """Every import anywhere in *tree* (a name imported inside a function is taken as the file's)."""
        imports = cls()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.add(node)
        return imports

    def qualify(self, expr: ast.AST) -> str | None:
        """``F.relu`` -> ``torch.nn.functional.relu`` when ``F`` is an import; None for anything else."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in self.names:
            return ".".join([self.names[expr.id], *reversed(parts)])
        return None

    def roots(self) -> set[str]:
        """The top-level packages the file imports (``torch``, ``paddle``, ``numpy`` ...)."""
        return {qualified.split(".")[0] for qualified in self.names.values()}


def call_form(call: ast.Call, imports: Imports) -> str:
    """The form of a call: a function by its qualified name, a method by its name, an object made and called
    at once by its class's name and ``()`` (``fn:paddle.nn.initializer.Constant()``), a call of a local name
    (a module, a function of the file) as ``call``."""
    qualified = imports.qualify(call.func)
    if qualified:
        if any(k.arg == "out" for k in call.keywords):
            return "fn:" + qualified + OUT_SUFFIX
        if any(k.arg == "inplace" and constant(k.value) is True for k in call.keywords):
            return "fn:" + qualified + INPLACE_SUFFIX
        return "fn:" + qualified
    if isinstance(call.func, ast.Attribute):
        return "method:" + call.func.attr
    if isinstance(call.func, ast.Call):  # an object made and called at once: paddle's Constant(0.5)(w)
        made = imports.qualify(call.func.func)
        if made:
            return "fn:" + made + "()"
    return "call"



def argument_kind(call: ast.Call, imports: Imports) -> str:
    """How the call spells its first argument after the tensor (a method's first, a function's second):
    ``framework`` (an attribute of an imported module, such as ``torch.float32``), ``string``, ``number``,
    ``value`` (anything else), or ``none``.  One spelling can be two ops told apart so:
    ``x.view(torch.int32)`` is a dtype view, ``x.view(2, 3)`` a shape view."""
    position = 0 if isinstance(call.func, ast.Attribute) and imports.qualify(call.func) is None else 1
    if len(call.args) <= position:
        return "none"
    first = call.args[position]
    if isinstance(first, ast.Constant):
        if isinstance(first.value, str):
            return "string"
        return "number" if isinstance(first.value, (int, float)) and not isinstance(first.value, bool) else "value"
    if isinstance(first, ast.UnaryOp) and isinstance(first.operand, ast.Constant):
        return "number"
    return "framework" if imports.qualify(first) else "value"


def expression_form(value: ast.AST, imports: Imports) -> str | None:
    """The form of the expression an assignment binds, or None when it spells no op."""
    if isinstance(value, ast.Call):
        return call_form(value, imports)
    if isinstance(value, ast.BinOp):
        return "binop:" + type(value.op).__name__
    if isinstance(value, ast.Subscript):
        return "getitem"
    if isinstance(value, ast.Attribute):
        return "attr:" + value.attr
    if isinstance(value, ast.Name):
        return "assign"
    if isinstance(value, ast.Compare) and len(value.ops) == 1:
        return "compare:" + type(value.ops[0]).__name__
    return None


def statement_form(statement: ast.stmt, imports: Imports) -> str | None:
    """The form of one statement, or None."""
    if isinstance(statement, ast.AugAssign):
        through_data = isinstance(statement.target, ast.Attribute) and statement.target.attr == "data"
        return ("aug-data:" if through_data else "aug:") + type(statement.op).__name__
    if isinstance(statement, ast.Assign):
        target = statement.targets[0]
        if isinstance(target, ast.Subscript):
            return "setitem"
        if isinstance(target, ast.Attribute):
            return "setattr:" + target.attr
        return expression_form(statement.value, imports)
    if isinstance(statement, ast.Expr):
        return expression_form(statement.value, imports)
    if isinstance(statement, ast.With) and statement.items:
        context = statement.items[0].context_expr
        qualified = imports.qualify(context.func if isinstance(context, ast.Call) else context)
        return "with:" + qualified if qualified else None
    if isinstance(statement, ast.For):
        return "for"
    return None


def name_of(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def constant(node: ast.AST | None) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    return None


def positional(args: Sequence[Any], role: str) -> Any:
    if role.startswith("arg") and role[3:].isdigit():
        index = int(role[3:])
        return args[index] if index < len(args) else None
    return None


def argument_node(node: ast.AST, role: str, imports: "Imports") -> ast.AST | None:
    """The expression the code wrote for argument *role* (``arg0`` of a method call is its receiver; of a
    function the file imported, ``F.silu(x)``, its first argument)."""
    if not isinstance(node, ast.Call) or not role.startswith("arg"):
        return None
    index = int(role[3:])
    if isinstance(node.func, ast.Attribute) and imports.qualify(node.func) is None:
        items = [node.func.value, *node.args]
    else:
        items = list(node.args)
    return items[index] if index < len(items) else None


def advanced_index(index_node: ast.AST, index: Any) -> bool:
    """Advanced indexing (a list, a tensor of indices): a copy, not a view."""
    nodes = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    for node in nodes:
        if isinstance(node, (ast.List, ast.ListComp)):
            return True
    values = index if isinstance(index, tuple) else (index,)
    return any(getattr(v, "kind", None) in ("tensor", "array") for v in values)
