"""PaConvert: a case's torch program, converted to paddle by PaddlePaddle's own converter, run on paddle.

This column answers a porter's question the two framework columns cannot: what happens to the torch
code when PaConvert converts it.  The program converted is the torch column's own (``TorchAdapter``
spells it, checked against the installed torch); the converter is PaConvert as its command line runs
it, one file in and one file out (``paconvert.converter.Converter(log_dir=...).run(IN, OUT)``); the
converted file runs on paddle and is read as paddle's objects are (``PaddleAdapter``), and judged by the
same reference as every column.  What the converter said of each file (the APIs it converted and those
it marked as not supported) is kept with the cell, so a report can say whether it told its user.

Three things are the harness's own and are never converted: its statements in the program (step marks
and the reads of observations, spelled for paddle, whose objects they read: set aside as placeholders
while PaConvert runs, then put back), a reproducer's helpers that print them, and its comments (PaConvert
drops comments, so the reproducer's title is put back; its step labels are strings, which survive).  Each program is converted
and run in a fork of the worker (``Adapter.isolated``): PaConvert's helper code sets attributes of
``paddle.Tensor`` for the rest of its process, and its store of helper code is a process-wide singleton.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from conformance.adapter import Adapter, ConversionFailed, distribution_version
from conformance.adapters.paddle import PaddleAdapter
from conformance.adapters.torch import TorchAdapter
from conformance.program.translate import Program, translate

if TYPE_CHECKING:
    import numpy as np

    from conformance.case.model import Case

__all__ = ["PaConvertAdapter", "conversion_report"]

#: What PaConvert writes before a line it could not convert (``Converter.mark_unsupport``).
MARK = ">>>>>>"
_LOG_LINE = re.compile(r"^\[[^\]]*?:(?P<line>\d+)\] \[(?P<tag>[A-Za-z ]+)\] (?P<text>.*)$")


class PaConvertAdapter(Adapter):
    name = "paconvert"
    import_name = "paconvert"
    distributions = ("paconvert",)
    #: The modules besides PaConvert this column needs: torch to write the program, paddle to run it.
    imports = ("torch", "paddle")
    root = "paddle"
    converter = "PaConvert"
    source = "torch"
    isolated = True
    # The converted program runs on paddle: paddle's safety checks, machinery and documented copies.
    autograd_messages = PaddleAdapter.autograd_messages
    machinery_warnings = PaddleAdapter.machinery_warnings
    copies = PaddleAdapter.copies

    def __init__(self) -> None:
        super().__init__()
        self.writer = TorchAdapter()  # writes the torch program, as the torch column does
        self.runner = PaddleAdapter()  # runs the converted program, and reads its objects

    @classmethod
    def version_label(cls, version: str) -> str:
        """``3.3.1+paddle3.3.1``: the converter and the paddle it converts for are pinned as a pair, and a
        column names both."""
        paddle = distribution_version(PaddleAdapter.distributions)
        return f"{version}+paddle{re.sub(r'[^0-9A-Za-z.]', '.', paddle)}" if paddle else version

    def facts(self) -> dict[str, str]:
        """That this column is a converter's, the torch that wrote the program and the paddle that ran it
        (``source_version`` pairs this column's cells with the torch cells of the same programs)."""
        return {"converter": self.converter, "source": f"torch {self.writer.version}",
                "source_version": self.writer.version, "runs_on": f"paddle {self.runner.version}"}

    def start(self) -> None:
        self.writer.start()
        self.runner.start()

    # -- the program: torch's, converted -------------------------------------------------------

    def program(self, case: Case, device: str, *, harness: bool, mode: str = "eager") -> Program:
        original = translate(case, self.writer, device, harness=harness, mode=mode, reader=self.runner,
                             shown_as=self.name, comments=False)
        if original.unsupported:
            return dataclasses.replace(original, unsupported=f"the torch program cannot be written: "
                                                             f"{original.unsupported}", original=original)
        ours = tuple(line for line in original.head if line.startswith("#"))  # the encoding line, a title
        body, kept = _set_aside(original)
        code = "\n".join([line for line in original.head if not line.startswith("#")] + body)
        try:
            ast.parse(code)
        except SyntaxError as exc:  # the harness wrote it: no converter is to blame
            raise RuntimeError(f"the torch program the harness wrote does not parse: {exc}") from None
        converted, report = convert(code, case.id)
        text = _after_imports(_put_back(converted.rstrip("\n"), kept), original.helpers)
        return Program(ours, (), (text,), conversion=report, original=original)

    def unresolved(self, program: Program) -> list[str]:
        """The torch names the harness wrote that torch lacks; the converted program's are PaConvert's."""
        return self.writer.unresolved(program.original or program)

    # -- running and reading: paddle's -----------------------------------------------------------

    @property
    def build(self) -> str:
        """The build of the paddle that runs the converted programs."""
        return self.runner.build

    def numpy_problem(self) -> str | None:
        return self.writer.numpy_problem() or self.runner.numpy_problem()

    def device_problem(self, device: str) -> str | None:
        if device == "gpu" and self.runner.fw.device.is_compiled_with_cuda():
            # Looking for a GPU initialises CUDA in the worker, and a fork of a process that has cannot use it.
            return ("the PaConvert column runs each program in a fork of its worker, and CUDA initialised in the "
                    "worker (as looking for a GPU does) cannot be used in a fork: it runs on the CPU only")
        return self.runner.device_problem(device)

    def device_name(self, device: str) -> str | None:
        return None if self.device_problem(device) else self.runner.device_name(device)

    def prelude(self, device: str) -> list[str]:
        return self.writer.prelude(device)

    @property
    def tensor_type(self) -> type:
        return self.runner.tensor_type

    def read_values(self, tensor: Any) -> np.ndarray:
        return self.runner.read_values(tensor)

    def read_expression(self, x: str) -> str:
        return self.runner.read_expression(x)

    def memory_layout(self, tensor: Any) -> tuple[int, Sequence[int], Sequence[int], int]:
        return self.runner.memory_layout(tensor)


#: The statement that stands in for one of the harness's own while PaConvert converts the program.
_PLACEHOLDER = "_harness_statement_({})"


def _set_aside(program: Program) -> tuple[list[str], dict[str, str]]:
    """The program's body with each of the harness's own statements (``Program.harness``: step marks and the
    reads of observations, spelled for paddle) replaced by a placeholder call PaConvert leaves alone, and the
    statements by placeholder: the reads are the harness's, never a converter's."""
    body, kept = list(program.body), {}
    for n, index in enumerate(sorted(program.harness)):
        line = body[index]
        token = _PLACEHOLDER.format(n)
        kept[token] = line.strip()
        body[index] = line[:len(line) - len(line.lstrip())] + token
    return body, kept


def _put_back(code: str, kept: dict[str, str]) -> str:
    """*code* with each placeholder replaced by the statement it stands for, at its indentation there."""
    lines, seen = [], set()
    for line in code.splitlines():
        token = line.strip()
        if token in kept:
            seen.add(token)
            line = line[:len(line) - len(line.lstrip())] + kept[token]
        lines.append(line)
    if len(seen) != len(kept):  # PaConvert dropped or rewrote a statement it has no reason to touch
        raise RuntimeError(f"PaConvert's output lacks {len(kept) - len(seen)} of the harness's own statements "
                           f"(step marks, observation reads), so the converted program cannot be observed")
    return "\n".join(lines)


def _after_imports(code: str, lines: Sequence[str]) -> str:
    """*code* with *lines* (the reproducer's helpers) after its leading imports, where a reader looks for
    them; at the top when the converted code does not parse (PaConvert marks what it could not convert)."""
    if not lines:
        return code
    try:
        statements = ast.parse(code).body
    except SyntaxError:
        return "\n".join([*lines, code])
    end = 0
    for statement in statements:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            break
        end = statement.end_lineno or end
    text = code.splitlines()
    return "\n".join(text[:end] + ["", *lines] + text[end:])


def convert(code: str, name: str) -> tuple[str, dict[str, Any]]:
    """*code* converted by PaConvert, as ``paconvert -i IN -o OUT`` converts a file, and what it said.

    PaConvert keeps state between conversions in one process (its store of helper code is a singleton that
    remembers the first output file), so each conversion runs in a process of its own: the worker's fork."""
    from paconvert.converter import Converter

    with tempfile.TemporaryDirectory(prefix="conformance-paconvert-") as folder:
        source, target, log = Path(folder, f"{name}.py"), Path(folder, "out", f"{name}.py"), Path(folder, "log")
        source.write_text(code + "\n", encoding="utf-8")
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                converter = Converter(log_dir=str(log))
                converted, failed = converter.run(str(source), str(target))
        except Exception as exc:  # noqa: BLE001 - the converter's own failure: what its user meets
            raise ConversionFailed(f"PaConvert failed on the program: {type(exc).__name__}: {exc}") from exc
        report = conversion_report(log.read_text(encoding="utf-8", errors="replace"), converted, failed)
        text = target.read_text(encoding="utf-8")
    report["marked_lines"] = sum(1 for line in text.splitlines() if line.lstrip().startswith(MARK))
    return text, report


def conversion_report(log: str, converted: int, failed: int) -> dict[str, Any]:
    """What PaConvert told its user about one file: the APIs it converted, and each one it did not
    (``[Not Support]``) or removed (``[Delete]``), with the line of the torch program."""
    not_supported, deleted = [], []
    for raw in log.splitlines():
        match = _LOG_LINE.match(raw.strip())
        if match is None:
            continue
        entry = f"line {match['line']}: {match['text'].strip()}"
        if match["tag"] == "Not Support":
            not_supported.append(entry)
        elif match["tag"] == "Delete":
            deleted.append(entry)
    total = converted + failed
    return {"tool": "PaConvert", "apis": total, "converted": converted, "not_converted": failed,
            "rate": round(converted / total, 4) if total else 1.0, "not_supported": not_supported,
            "deleted": deleted}
