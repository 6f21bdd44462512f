"""Only warnings the case's own steps raise decide ``warns``: not those of an import that happens to fall
in a cell (they fire once per process, so they would make an outcome depend on the order of the cells),
not those of the program's set-up or of the harness reading an observation, and not those a
framework's own machinery raises whatever the program does; each is still recorded, with why."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest

from conformance.adapter import adapter_classes
from conformance.case.load import load_case
from conformance.engine import Engine
from conformance.workers.worker import _Run

from .conftest import INSTALLED, ROOT, SEED, framework_params


def _run(framework: str) -> _Run:
    return _Run(adapter_classes()[framework]())


def _warn_through(run: _Run, action) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = run.warned
        action()


@pytest.mark.parametrize("framework", framework_params())
def test_where_a_warning_comes_from_decides_whether_it_counts(framework: str, tmp_path: Path,
                                                              monkeypatch) -> None:
    run = _run(framework)
    _warn_through(run, lambda: warnings.warn("in the set-up"))  # before the first step
    run.mark(3)
    _warn_through(run, lambda: warnings.warn("from step 3"))
    run.reading = True
    _warn_through(run, lambda: warnings.warn("while the harness reads"))
    run.reading = False
    (tmp_path / "lazily_imported.py").write_text("import warnings\nwarnings.warn('at import', DeprecationWarning)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _warn_through(run, lambda: importlib.import_module("lazily_imported"))
    sys.modules.pop("lazily_imported", None)
    assert [w["message"] for w in run.warnings] == ["from step 3"]
    why = {w["message"]: w["why"] for w in run.ignored_warnings}
    assert "before the case's first step" in why["in the set-up"]
    assert "harness read" in why["while the harness reads"]
    assert "imported" in why["at import"] and "order of the cells" in why["at import"]


@pytest.mark.skipif("torch" not in INSTALLED, reason="torch is not installed")
def test_a_fresh_torch_worker_s_first_compile_gives_the_outcome_of_a_warm_one(write_case) -> None:
    """torch.compile imports modules on its first use, and one of them warns (DeprecationWarning); the
    outcome of the first compiled cell of a worker must be the one it has in any other place."""
    case = load_case(SEED / "clone_then_requires_grad.yaml")
    outcomes = []
    for _ in range(2):
        engine = Engine(timeout=300)  # a fresh worker each time: its first compile
        try:
            first = engine.run_cell(case, "torch", "cpu", "compile")
            second = engine.run_cell(load_case(SEED / "clone_then_requires_grad.yaml"), "torch", "cpu", "compile")
        finally:
            engine.close()
        outcomes.append((first["outcome"], second["outcome"]))
        assert first["outcome"] == second["outcome"] != "warns", first["details"]
    assert outcomes[0] == outcomes[1]


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_paddle_s_own_place_warning_in_full_graph_mode_is_recorded_but_does_not_count() -> None:
    engine = Engine(timeout=300)
    try:
        record = engine.run_cell(load_case(SEED / "iadd_after_relu.yaml"), "paddle", "cpu", "to_static_full_graph")
    finally:
        engine.close()
    ignored = record["details"].get("ignored_warnings", [])
    place = [w for w in ignored if "'place' interface" in w["message"]]
    assert place and "to_static machinery" in place[0]["why"]
    counted = [w["message"] for w in record["details"].get("warnings", [])]
    assert not any("'place' interface" in message for message in counted)
    if not counted:
        assert record["outcome"] != "warns"


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_a_to_static_cell_gives_the_outcome_of_a_fresh_process_when_its_worker_ran_it_before() -> None:
    """SOT caches translated code by code object, and equal programs have equal code objects: a cell whose
    program the worker had translated before would skip the translation and the warning it raises
    ("multiply_() is the same as multiply()") and be silent-correct, where a script in a fresh
    interpreter warns.  The worker forgets earlier programs' translations before each compiled cell."""
    case = ROOT / "cases" / "grads" / "held_grad_scale_inplace_no_grad.yaml"
    engine = Engine(timeout=300)
    try:
        records = [engine.run_cell(load_case(case), "paddle", "cpu", "to_static") for _ in range(2)]
    finally:
        engine.close()
    assert records[0]["outcome"] == "warns", records[0]["details"]  # as its reproducer does, run as a script
    assert records[1]["outcome"] == records[0]["outcome"], records[1]["details"]


@pytest.mark.parametrize("message", [
    "Tensor do not have 'place' interface for pir graph mode, try not to use it. None will be returned.",  # 3.3
    "Value do not have 'place' interface for pir graph mode, try not to use it. None will be returned.",  # 3.0-3.2
    "Variable do not have 'place' interface for static graph mode, try not to use it. None will be returned.",
])
def test_paddle_s_place_warning_is_machinery_in_every_release_s_wording(message: str) -> None:
    """Each release words the warning after the kind of value its graph holds; under any wording it is
    raised by to_static's own backward (full_like in _append_backward), so it never decides a cell."""
    assert "to_static machinery" in adapter_classes()["paddle"].machinery_warning(message)


def test_paddle_s_once_per_process_api_notice_is_not_about_the_case() -> None:
    """paddle 3.2's ``split`` warns that it differs from torch's on its first call in a process only:
    counted, it would make a cell ``warns`` or not by which cell of the worker called ``split`` first."""
    notice = ("\nNon compatible API. Please refer to https://www.paddlepaddle.org.cn/documentation/docs/en/develop/"
              "guides/model_convert/convert_from_pytorch/api_difference/torch/torch.split.html first.")
    assert "first call of the API in a process" in adapter_classes()["paddle"].machinery_warning(notice)
    assert adapter_classes()["paddle"].machinery_warning("In static graph mode, add_() is the same as add()") is None


def test_a_warning_counts_only_when_the_user_s_filters_show_it() -> None:
    """Python's default filters (and what a framework adds at import) decide what the user sees: a
    DeprecationWarning raised outside __main__ is hidden, one raised by the program itself is shown."""
    import re

    from conformance.workers.visibility import hidden_by

    defaults = [("default", None, DeprecationWarning, "__main__", 0), ("ignore", None, DeprecationWarning, None, 0),
                ("ignore", None, PendingDeprecationWarning, None, 0)]
    numpy_file = sys.modules["numpy"].__file__
    why = hidden_by(defaults, DeprecationWarning, "old", numpy_file, 3, "/tmp/program.py")
    assert why is not None and "ignore::DeprecationWarning" in why and "raised in numpy" in why
    assert hidden_by(defaults, DeprecationWarning, "old", "/tmp/program.py", 3, "/tmp/program.py") is None
    assert hidden_by(defaults, UserWarning, "careful", numpy_file, 3, "/tmp/program.py") is None
    assert hidden_by(defaults, PendingDeprecationWarning, "soon", "/tmp/program.py", 1, "/tmp/program.py")
    added = [("ignore", re.compile("numpy.dtype size changed", re.I), Warning, None, 0)] + defaults
    assert hidden_by(added, UserWarning, "numpy.dtype size changed, may indicate", numpy_file, 1, None)
    assert hidden_by([("always", None, Warning, None, 0)], DeprecationWarning, "x", numpy_file, 1, None) is None


@pytest.mark.skipif("torch" not in INSTALLED, reason="torch is not installed")
def test_numpy_s_deprecation_warning_inside_torch_is_hidden_and_the_cell_judged_as_silent() -> None:
    """found_compiled_assign_idiv_c7dcac: under NumPy 2, torch's __array_wrap__ makes NumPy warn with a
    DeprecationWarning that Python's default filters hide; the user sees no warning, and a wrong result."""
    import numpy as np

    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip(f"NumPy {np.__version__} raises no such warning")
    case = load_case(ROOT / "cases" / "found" / "found_compiled_assign_idiv_c7dcac.yaml")
    engine = Engine(timeout=300)
    try:
        record = engine.run_cell(case, "torch", "cpu")
    finally:
        engine.close()
    hidden = [w for w in record["details"].get("ignored_warnings", []) if w["category"] == "DeprecationWarning"]
    assert hidden and "hidden from the user" in hidden[0]["why"]
    assert record["outcome"] == "silent-wrong" and not record["details"].get("warnings")
