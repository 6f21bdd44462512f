"""A cell's harness program, written and compiled once and kept between runs.

Before a worker runs a cell it writes the case's program (about 60-70 us on this project's machine) and
compiles it (170-200 us): together more than everything else the worker adds to the case's own work,
and the same on every run of an unchanged catalogue.  So a program is kept, with its compiled code, as
Python keeps a module's ``.pyc``: under the case's exact content (its pickled bytes), the framework's
installed version and build, NumPy's version, the device and the mode, in a folder of the user's cache
named after this package's code and the Python running it (``conformance.cache.code_folder``), sealed
with the user's own key.  Anything else (another version, an edited case, an entry planted or edited in
the folder) writes and compiles the program afresh.

The code is compiled as a user's script is (``dont_inherit``: none of this package's ``__future__``
imports), and a kept one is renamed to the file the worker writes the source to before it runs, so a
traceback, ``inspect.getsource`` and a compiler that reads the source (``paddle.jit.to_static``) see
exactly what they see for a program compiled there.  Kept: a program with nothing unsupported, of an
adapter that runs the program as the harness wrote it (a converter rewrites it, in its own process).
An entry is read back by ``marshal``, which builds values and code objects and calls nothing; the code
is code, as a ``.pyc`` is, and runs only when the entry's seal is the user's own (docs/guarantees.md).
"""

from __future__ import annotations

import functools
import marshal
import os
from types import CodeType
from typing import Any

from conformance.cache import code_folder, name_part, read_sealed, write_sealed
from conformance.case.model import Case
from conformance.program.rendered import case_key
from conformance.program.writer import Program

__all__ = ["at_file", "compile_program", "harness_program", "keep"]

#: An adapter (``conformance/adapter.py``): the layer above this one, which writes the programs.
Adapter = Any


def compile_program(source: str, filename: str) -> CodeType:
    """*source* compiled as Python compiles a user's script read from *filename*."""
    return compile(source, filename, "exec", dont_inherit=True)


def at_file(code: CodeType, filename: str) -> CodeType:
    """*code* as if compiled from *filename*: the functions it defines too (their code is among its
    constants); nothing else about a code object depends on the file it was compiled from."""
    constants = tuple(at_file(value, filename) if isinstance(value, CodeType) else value for value in code.co_consts)
    return code.replace(co_filename=filename, co_consts=constants)


def harness_program(adapter: Adapter, case: Case, device: str, mode: str) -> tuple[Program, CodeType | None]:
    """The harness's program of a cell and its code, when it is kept (compiled at an earlier worker's
    file: :func:`at_file` places it); (program, None) when it is written afresh, to be compiled and then
    :func:`keep`-ed."""
    path = _entry_path(adapter, case, device, mode)
    if path is not None and (mode == "eager" or adapter.mode_problem(mode, device) is None):  # a compiler gone since
        data = read_sealed(path)
        kept = _read(data) if data is not None else None
        if kept is not None:
            return kept
    return adapter.program(case, device, harness=True, mode=mode), None


def keep(adapter: Adapter, case: Case, device: str, mode: str, program: Program, code: CodeType) -> None:
    """Keep a cell's program and its code for the next run; one that cannot be kept is written afresh then."""
    path = _entry_path(adapter, case, device, mode)
    if path is None or program.unsupported is not None:
        return
    fields = (program.head, program.helpers, program.body, program.harness, program.labels, program.compiles)
    try:
        data = marshal.dumps((*fields, code))
    except ValueError:  # a value marshal cannot write: never kept
        return
    write_sealed(path, data)


def _read(data: bytes) -> tuple[Program, CodeType] | None:
    try:
        head, helpers, body, harness, labels, compiles, code = marshal.loads(data)
        program = Program(head, helpers, body, harness=harness, labels=labels, compiles=compiles)
    except Exception:  # noqa: BLE001 - an entry of another shape is written afresh
        return None
    return (program, code) if isinstance(code, CodeType) else None


def _entry_path(adapter: Adapter, case: Case, device: str, mode: str) -> str | None:
    """Where a cell's program is kept; None for an adapter whose program is not the harness's as written."""
    if adapter.isolated or adapter.converter is not None:
        return None
    column = _column(adapter.name, adapter.version, adapter.build, device, mode)
    return os.path.join(code_folder("compiled"), f"{column}-{case_key(case)}")  # the key show's programs have


@functools.lru_cache(maxsize=64)
def _column(framework: str, version: str, build: str, device: str, mode: str) -> str:
    import numpy

    return name_part(f"{framework}-{version}-{build}-numpy{numpy.__version__}-{device}-{mode}")
