"""conformance scan measured on the catalogue's own programs and on the seeds' code; the data it ships is the
committed results'."""

from __future__ import annotations

import json
import textwrap

import pytest

from conformance.scan.catalogue import CELL_CLASS, Catalogue
from conformance.scan.measure import measure
from conformance.scan.question import Side
from conformance.scan.scanner import Scanner

from .committed import ROOT, committed_results


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_every_hazard_is_found_in_its_own_program(catalogue: Catalogue, framework: str) -> None:
    measured = measure(catalogue, framework)
    assert not measured.missed, (f"hazards no rule finds in their {framework} program (add a rule, or say why none "
                                 f"can in the case's not_scanned:): {measured.missed}")
    assert measured.recall >= 0.9
    assert len(measured.found) >= 120  # the catalogue's hand-written hazards with a program in this framework


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_no_safe_spelling_is_flagged(catalogue: Catalogue, framework: str) -> None:
    measured = measure(catalogue, framework)
    assert len(measured.remedies) >= 60
    assert not measured.flagged, f"remedies that stand for a case some question reports: {measured.flagged}"


def test_a_port_reports_no_case_that_behaves_alike_on_both_sides(catalogue: Catalogue) -> None:
    """A program of a case that behaves alike on torch 2.13.0 and paddle 3.3.1 gives no finding in that port,
    unless the scanner cannot tell it from a case that does not (it then names both: ``Finding.also``)."""
    scanner = Scanner(catalogue, source=Side("torch", "2.13.0"), target=Side("paddle", "3.3.1"))
    checked, wrong, undecided = 0, [], []
    for case in catalogue.cases.values():
        program = case.programs.get("torch")
        before = catalogue.cell(case.id, "torch", "2.13.0", "eager")
        after = catalogue.cell(case.id, "paddle", "3.3.1", "eager")
        if not program or CELL_CLASS.get(before) != CELL_CLASS.get(after):
            continue
        checked += 1
        for finding in scanner.scan_text(program, f"{case.id}.py").findings:
            (undecided if case.id in finding.also else wrong).append((case.id, finding.case))
    assert checked > 100
    assert not wrong, f"cases that behave alike, reported as another case: {wrong}"
    assert len(undecided) <= 2, f"cases the scanner cannot tell from one that differs: {undecided}"


def test_the_shipped_data_is_the_committed_results(tmp_path) -> None:
    from conformance.adapter import adapter_classes
    from conformance.case.load import load_cases
    from conformance.records.programs import load_programs
    from conformance.records.results import latest_by_cell, load_records
    from conformance.scan.build import DATA_FILE, build_data, write_data

    paths = committed_results()
    cases, errors = load_cases([ROOT / "cases"])
    assert not errors
    data = build_data(cases, list(latest_by_cell(load_records(paths)).values()), load_programs(paths),
                      adapter_classes())
    written = write_data(data, tmp_path / "catalogue.json")
    assert json.loads(written.read_text()) == json.loads(DATA_FILE.read_text()), (
        "conformance/scan/catalogue.json is stale: run `tox -e report` (conformance scan-data) and commit it")


# -- the seeds' own code (../shared/seeds: the articles the project started from) ------------------------

#: seed 000: a forward that adds a feature map to a ReLU's output with +=, and the article's fix
SEED_000 = """
import torch.nn as nn
import torch.nn.functional as F

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Linear(8, 8)

    def forward(self, inp, feature16):
        x = F.relu(self.conv(inp))
        x {op} feature16
        return x
"""

#: seed 003: the RNN hidden state reused across backward(retain_graph=True), and the article's fix
SEED_003 = """
import torch
rnn = torch.nn.RNN(input_size=1, hidden_size=1, num_layers=1)
train_set_x = torch.tensor([[[1]], [[2]], [[3]], [[4]], [[5]]], dtype=torch.float32)
train_set_y = torch.tensor([[[2]], [[4]], [[6]], [[8]], [[10]]], dtype=torch.float32)
h0 = torch.tensor([[0]], dtype=torch.float32)
h_cur = h0
loss = torch.nn.MSELoss()
opt = torch.optim.Adadelta(rnn.parameters(), lr=0.01)
for i in range(5):
    opt.zero_grad()
    train_output, h_next = rnn(train_set_x[i], h_cur)
    rnn_loss = loss(train_output, train_set_y[i])
    {fix}rnn_loss.backward({retain})
    opt.step()
    print(train_output)
    {carry}
"""

#: seed 004: a tensor on a NumPy array's memory written; .data scaled in place while a detach() of it is held
SEED_004 = """
import torch as t
import numpy as np
a = np.ones(4)
b = t.{make}(a)
b.add_(1)
print(a)
a = t.tensor(1.0, requires_grad=True)
b = a.clone()
c = a.{keep}()
a.data *= 3
b += 1
print(a)
print(b)
print(c)
"""


def _cases(catalogue: Catalogue, code: str, **kwargs) -> list[str]:
    scanner = Scanner(catalogue, **kwargs)
    return [f.case for f in scanner.scan_text(textwrap.dedent(code), "seed.py").findings]


def test_seed_000_the_feature_added_in_place_after_relu(catalogue: Catalogue) -> None:
    assert _cases(catalogue, SEED_000.format(op="+=")) == ["iadd_after_relu"]
    assert _cases(catalogue, SEED_000.format(op="= x +")) == []


def test_seed_003_the_hidden_state_carried_into_the_next_backward(catalogue: Catalogue) -> None:
    assert _cases(catalogue, SEED_003.format(fix="", retain="retain_graph=True", carry="h_cur = h_next")) \
        == ["rnn_hidden_reuse"]
    fixed = SEED_003.format(fix="h_cur = h_next.detach()\n    ", retain="", carry="")
    assert _cases(catalogue, fixed) == []


def test_seed_004_numpy_memory_and_data_scaled_in_place(catalogue: Catalogue) -> None:
    to_paddle = {"target": Side("paddle", "3.0.0")}
    assert _cases(catalogue, SEED_004.format(make="from_numpy", keep="detach"), **to_paddle) \
        == ["from_numpy_aliasing", "data_imul_keeps_storage"]
    # the article's copies: the tensor made from the array by copying it, a clone() kept instead of detach()
    assert _cases(catalogue, SEED_004.format(make="tensor", keep="clone"), **to_paddle) == []
