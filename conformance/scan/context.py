"""What a file defines, as every function's reading of it needs: its classes, its functions, which of them
the framework compiles, what each writes into its arguments; and the state of one function being read."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from conformance.scan.events import Write
from conformance.scan.forms import Imports
from conformance.scan.vocabulary import Vocabulary

__all__ = ["ClassInfo", "FileContext", "State"]


@dataclass
class ClassInfo:
    """A class of the file: its base classes (qualified where imported) and its methods."""

    node: ast.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def is_module(self) -> bool:
        return any(b.endswith(("nn.Module", "nn.Layer", "Module", "Layer")) for b in self.bases)

    @property
    def is_optimizer(self) -> bool:
        return any(b.endswith("Optimizer") and (".optim" in b or ".optimizer" in b) for b in self.bases)


@dataclass
class FileContext:
    """What a file defines, for every function's reading."""

    framework: str
    imports: Imports
    vocabulary: Vocabulary
    classes: dict[str, ClassInfo]
    functions: dict[str, ast.FunctionDef]
    compiled: dict[str, str]  # function name -> mode
    summaries: dict[str, list[tuple[int, Write]]] = field(default_factory=dict)
    _arities: dict[str, int] = field(default_factory=dict)

    def returned_tuple(self, name: str) -> int:
        """How many values a function of the file returns when its one return is a tuple, else 0."""
        if name not in self._arities:
            returns = [n for n in ast.walk(self.functions[name]) if isinstance(n, ast.Return) and n.value is not None]
            single = len(returns) == 1 and isinstance(returns[0].value, ast.Tuple)
            self._arities[name] = len(returns[0].value.elts) if single else 0
        return self._arities[name]


class State:
    """The names of one function at one point, and the modes in force."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}
        self.grad_enabled = True

    def copy(self) -> "State":
        other = State()
        other.env = dict(self.env)
        other.grad_enabled = self.grad_enabled
        return other
