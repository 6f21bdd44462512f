"""docs/ops.md, the op reference, is written from the op registry, the shipped scanner data and the catalogue:
a new op, field or spelling shows there, and the committed page is what they give."""

from __future__ import annotations

from conformance.ops import OBSERVATIONS, OPS
from conformance.report.ops_page import current_page

from .conftest import ROOT


def test_the_committed_op_reference_is_what_the_registry_gives() -> None:
    assert (ROOT / "docs" / "ops.md").read_text(encoding="utf-8") == current_page(ROOT / "cases"), \
        "docs/ops.md is stale: run `python -m conformance.report.ops_page docs/ops.md` (tox -e report) and commit it"


def test_every_op_field_and_observation_is_on_the_page() -> None:
    page = current_page(ROOT / "cases")
    for name, op in OPS.items():
        section = page.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        assert op.doc.replace("|", "\\|") in section, name
        for field_name, field in op.fields.items():
            assert f"- `{field_name}` ({field.type}, " in section, (name, field_name)
    for name in OBSERVATIONS:
        assert f"- `{name}`: " in page
    # the spellings come from the committed programs: torch's fill_ is a method, silu_ the inplace keyword
    assert "- spelled in torch: `x.fill_(...)`" in page
    assert "`torch.nn.functional.silu(..., inplace=True)`" in page
