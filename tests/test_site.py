"""The static site (conformance/site/): built from the committed results, every case has a page whose grid
is the records, the values shown are the reference's, a build is byte-identical to the last and to the
committed reports/site, and in a real browser (headless Chromium) the search finds a case by its code,
leads to its page, and the pages read without JavaScript."""

from __future__ import annotations

import ast
import filecmp
import json
import re
import shutil
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from conformance.case.load import load_cases
from conformance.cli import main
from conformance.records.outcomes import SYMBOLS
from conformance.records.programs import write_programs
from conformance.records.record import Record
from conformance.records.results import latest_by_cell, load_records
from conformance.site.build import build_site, render_site
from conformance.site.grid import SHORT, value_text
from conformance.site.html import MARK

from .committed import ROOT, committed_results

#: The inputs as `conformance site` names them, relative to the repository (a page that names a file, the
#: control column of an upgrade step, names it as given).
CASES_DIR = Path("cases")


def _committed() -> list[Path]:
    return [p.relative_to(ROOT) for p in committed_results()]


def _controls() -> list[Path]:
    return sorted(p.relative_to(ROOT) for p in (ROOT / "reports" / "controls").glob("*.jsonl"))


@pytest.fixture(scope="module", autouse=True)
def _at_the_root() -> Iterator[None]:
    """Build as the report env does: from the repository's top folder, with the paths it gives."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        yield


class _Page(HTMLParser):
    """What a test reads of a page: the grid's cells, the evidence rows with their values, the notes of rows
    never run, and every link."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[dict[str, Any]] = []
        self.evidence: list[dict[str, Any]] = []
        self.never_run: list[dict[str, str]] = []
        self.links: list[str] = []
        self._open: dict[str, Any] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.links += [found[k] for k in ("href", "src") if k in found]
        if tag == "td" and "data-outcome" in found:
            self._open = {**found, "text": ""}
            self.cells.append(self._open)
        elif tag == "tr" and found.get("id", "").startswith("e-"):
            self.evidence.append({**found, "values": []})
        elif tag == "li" and "data-observation" in found and self.evidence:
            self.evidence[-1]["values"].append(found)
        elif tag == "p" and found.get("data-outcome") == "skipped":
            self.never_run.append(found)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data


@pytest.fixture(scope="module")
def records() -> dict[tuple[str, str, str, str, str], Record]:
    """The committed cells: (case, framework, version, mode, device) -> the latest record."""
    return {(r.case, r.framework, r.framework_version, r.mode, r.device): r
            for r in latest_by_cell(load_records(committed_results())).values()}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, _at_the_root: None) -> Path:
    """The site of the committed results and catalogue, built once into a folder of the tests' own."""
    output = tmp_path_factory.mktemp("site") / "site"
    built = build_site(_committed(), [CASES_DIR], output, _controls())
    assert not built.errors
    return output


def _page(site: Path, name: str) -> _Page:
    return _Page((site / name).read_text(encoding="utf-8"))


def test_every_case_of_the_catalogue_has_a_page(site: Path) -> None:
    cases, errors = load_cases([ROOT / "cases"])
    assert not errors
    assert {p.stem for p in (site / "cases").glob("*.html")} == {c.id for c in cases}
    index = (site / "index.html").read_text(encoding="utf-8")
    for case in cases:  # the index lists every case without any script
        assert f'<li data-case="{case.id}"><a href="cases/{case.id}.html">' in index


def test_a_case_judged_against_one_framework_s_documentation_says_so_on_its_page(site: Path) -> None:
    cases = [case for case in load_cases([ROOT / "cases"])[0] if case.judged_against]
    assert cases
    for case in cases:
        page = (site / "cases" / f"{case.id}.html").read_text(encoding="utf-8")
        assert '<p class="judged"><b>Judged against:</b> torch' in page, case.id


def test_a_case_page_names_the_scanner_rule_that_finds_it_in_code(site: Path) -> None:
    from conformance.scan.catalogue import Catalogue

    page = (site / "cases" / "iadd_after_relu.html").read_text(encoding="utf-8")
    assert 'Found in your code by <code>conformance scan</code>: <code>IC101</code>' in page
    rules = Catalogue.load().rules_of("saved_output_relu_mul_")
    assert rules and all(f"<code>{code}</code>" in (site / "cases" / "saved_output_relu_mul_.html").read_text()
                         for code in rules)


def test_every_cell_of_a_grid_is_its_committed_record(site: Path, records: dict) -> None:
    """Each grid cell's outcome is the record of its column, and every record of a case is a cell of its page
    (or, where no version of a row ran, that row's note)."""
    shown: dict[tuple[str, str, str, str, str], str] = {}
    never_run: set[tuple[str, str, str, str]] = set()
    for path in sorted((site / "cases").glob("*.html")):
        page = _Page(path.read_text(encoding="utf-8"))
        for cell in page.cells:
            key = (path.stem, cell["data-framework"], cell["data-version"], cell["data-mode"], cell["data-device"])
            shown[key] = cell["data-outcome"]
            assert SYMBOLS[cell["data-outcome"]] in cell["text"], (key, cell["text"])
            assert SHORT[cell["data-outcome"]] in cell["text"], (key, cell["text"])
        never_run |= {(path.stem, n["data-framework"], n["data-mode"], n["data-device"]) for n in page.never_run}
    for key, record in records.items():
        if key in shown:
            assert shown[key] == record.outcome, key
        else:
            case, framework, _, mode, device = key
            assert record.outcome == "skipped" and (case, framework, mode, device) in never_run, key
    assert set(shown) <= set(records)
    # a sample across frameworks, versions and modes, silent-wrong and silent-correct among them
    sample = {("data_imul_after_forward", "torch", "2.13.0", "eager", "cpu"): "silent-wrong",
              ("data_imul_after_forward", "paddle", "3.3.1", "eager", "cpu"): "silent-correct",
              ("residual_skip_alias_sees_iadd", "paddle", "3.3.1", "eager", "cpu"): "silent-wrong",
              ("residual_skip_alias_sees_iadd", "torch", "2.0.1", "eager", "cpu"): "silent-correct",
              ("rnn_hidden_reuse", "torch", "2.15.0", "eager", "cpu"): "raises",
              ("residual_skip_alias_sees_iadd", "torch", "2.0.1", "compile", "cpu"): "unsupported"}
    for key, outcome in sample.items():
        assert records[key].outcome == outcome, key
        assert shown[key] == outcome, key


def _evidence(site: Path, case: str, framework: str, version: str, mode: str, device: str) -> dict[str, Any]:
    [row] = [e for e in _page(site, f"cases/{case}.html").evidence
             if (e["data-framework"], e["data-mode"], e["data-device"]) == (framework, mode, device)
             and version in e["data-versions"].split()]
    return row


@pytest.mark.parametrize("cell", [("data_imul_after_forward", "torch", "2.13.0", "eager", "cpu"),
                                  ("residual_skip_alias_sees_iadd", "paddle", "3.3.1", "eager", "cpu"),
                                  ("residual_skip_alias_sees_iadd", "torch", "2.15.0", "eager", "cpu")])
def test_the_values_shown_are_the_references_and_what_the_framework_gave(site: Path, records: dict,
                                                                          cell: tuple[str, ...]) -> None:
    record = records[cell]
    row = _evidence(site, *cell)
    assert row["data-outcome"] == record.outcome
    shown = {v["data-observation"]: v for v in row["values"]}
    judged = [o for o in record.observations if "reference" in o]
    assert judged and set(shown) == {o["name"] for o in judged}
    for observation in judged:
        value = shown[observation["name"]]
        assert value["data-expected"] == value_text(observation["reference"])
        # read back as numbers, the value shown is the reference to the digits a cell is judged by
        assert np.allclose(ast.literal_eval(value["data-expected"]), observation["reference"], rtol=1e-5, atol=1e-6)
        if observation.get("ok") is False:
            assert np.allclose(ast.literal_eval(value["data-got"]), observation["value"], rtol=1e-5, atol=1e-6)
        else:
            assert "data-got" not in value
    command = f"conformance show {cell[0]} --framework {cell[1]} --mode {cell[3]} --device {cell[4]}"
    assert command in (site / f"cases/{cell[0]}.html").read_text(encoding="utf-8")


def test_a_build_is_byte_identical_to_the_last(site: Path, tmp_path: Path) -> None:
    again = build_site(_committed(), [CASES_DIR], tmp_path / "again", _controls())
    names = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert names == sorted(again.files)
    match, mismatch, errors = filecmp.cmpfiles(site, tmp_path / "again", names, shallow=False)
    assert not mismatch and not errors


def test_the_site_is_a_build_output_and_not_committed() -> None:
    """CI builds the site from the committed results (tox -e report) and publishes it; the repository keeps
    the results it is built from, not a second copy of what they say."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "reports/site"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout == ""
    assert "reports/site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_every_link_is_relative_and_leads_to_a_file_of_the_site(site: Path) -> None:
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith(f"<!DOCTYPE html>\n{MARK}\n")
        for link in _Page(text).links:
            parsed = urllib.parse.urlsplit(link)
            if parsed.scheme in ("http", "https"):  # a case's citation: a link out (nothing loads it: below)
                continue
            assert not parsed.scheme and not link.startswith("/"), (path, link)
            if parsed.path:
                assert (path.parent / urllib.parse.unquote(parsed.path)).is_file(), (path, link)
        assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(https?:)?//", text), path
        assert "fetch(" not in text


def test_an_upgrade_step_shows_each_changed_case_once_with_what_every_mode_does(site: Path) -> None:
    """torch 2.12.1 -> 2.13.0 changes cells eager and compiled: a maintainer reads each changed case in one row,
    a column per mode, before each mode's ranked detail (the eager and compiled rows used to be apart)."""
    from conformance.site.steps import upgrade_steps
    from conformance.report.render import load_sources

    _, sources = load_sources(_committed())
    [step] = [s for s in upgrade_steps(_committed(), sources, _controls()) if s.name == "torch-2.12.1-2.13.0"]
    assert len(step.comparisons) >= 2 and all(c.changes for c in step.comparisons)
    page = (site / "upgrades" / f"{step.name}.html").read_text(encoding="utf-8")
    table = page.split('<h2 id="every-mode">', 1)[1].split("</table>", 1)[0]
    assert page.index('<h2 id="every-mode">') < page.index('<table class="changes">')
    rows = dict(re.findall(r'<tr data-case="([^"]+)">(.*?)</tr>', table))
    expected = {change.case for c in step.comparisons for change in c.changes}
    assert set(rows) == expected
    for at, comparison in enumerate(step.comparisons):
        changed = {change.case: change for change in comparison.changes}
        for case, row in rows.items():
            cell = re.findall(r"<td>(.*?)</td>", row)[1 + at]
            if case in changed:
                assert cell.count('class="o ') == 2 and _label_of(changed[case].new) in cell, (case, cell)
            else:
                assert cell in ("unchanged", "only before", "only after"), (case, cell)


def _label_of(cell: Any) -> str:
    from conformance.outcomes import outcome_label

    return outcome_label(cell.outcome, cell.correct)


def test_pages_are_light(site: Path) -> None:
    """No page carries the matrix: a case page holds its own cells, the index the search entries by reference
    (the index and the search index list every case, and an upgrade page each cell that changed, at most a
    row a case and mode: theirs grow with the catalogue, and no faster)."""
    cases = len(list((site / "cases").glob("*.html")))
    for path in site.rglob("*"):
        if path.is_file():
            limit = {"search-index.js": 1_800 * cases, "index.html": 800 * cases}.get(
                path.name, 1_000 * cases if path.parent.name == "upgrades" else 150_000)
            assert path.stat().st_size < limit, (path, path.stat().st_size, limit)


@pytest.mark.parametrize("args, message", [
    (["--results", "no/such.jsonl"], "error: cannot read results file(s): no/such.jsonl"),
    (["--cases", "no/such/folder"], "error: no such case folder: no/such/folder"),
    (["--output", "FILE"], "error: cannot write FILE: it is not a folder"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture, args: list[str],
                                                          message: str) -> None:
    monkeypatch.chdir(ROOT)
    (tmp_path / "FILE").write_text("")
    args = [str(tmp_path / "FILE") if a == "FILE" else a for a in args]
    output = [] if "--output" in args else ["--output", str(tmp_path / "site")]
    assert main(["site", *args, *output]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(message.replace("FILE", str(tmp_path / "FILE")))
    assert not (tmp_path / "site").exists()


CASES = {
    "augmented/skip_alias.yaml": """\
id: skip_alias
title: "skip = h; h += b"
cause: "paddle's Tensor has no `__iadd__`: `h += b` binds a new tensor"
remedy: [skip_clone]
steps:
  - {op: tensor, out: h, value: [1.0]}
  - {op: assign, args: [h], out: skip}
  - {observe: value, of: skip}
""",
    "augmented/skip_clone.yaml": """\
id: skip_clone
title: "skip = h.clone(); h += b"
steps:
  - {op: tensor, out: h, value: [1.0]}
  - {op: clone, args: [h], out: skip}
  - {observe: value, of: skip}
""",
}


def _small_matrix(tmp_path: Path) -> tuple[list[Path], Path]:
    """Two cases, torch 2.12.1 and 2.13.0 and paddle 3.3.1, with programs kept for torch only."""
    for name, text in CASES.items():
        path = tmp_path / "cases" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    files = []
    for framework, version, outcome in (("torch", "2.12.1", "silent-correct"), ("torch", "2.13.0", "silent-correct"),
                                        ("paddle", "3.3.1", "silent-wrong")):
        path = tmp_path / "results" / f"{framework}-{version}-cpu.jsonl"
        path.parent.mkdir(exist_ok=True)
        lines = [json.dumps(Record(case=case, framework=framework, framework_version=version, device="cpu",
                                   outcome=outcome if case == "skip_alias" else "silent-correct",
                                   topic="augmented").to_dict()) for case in ("skip_alias", "skip_clone")]
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
        if framework == "torch":
            write_programs(path, [{"framework": "torch", "version": version, "device": "cpu", "mode": "eager",
                                   "case": case, "code": f"# torch {version}\nskip = h{suffix}\nh += b\n",
                                   "source": "import torch\n", "unsupported": None}
                                  for case, suffix in (("skip_alias", ""), ("skip_clone", ".clone()"))])
    return files, tmp_path / "cases"


def test_each_framework_shows_the_code_its_newest_kept_version_spelled(tmp_path: Path) -> None:
    files, cases = _small_matrix(tmp_path)
    built = build_site(files, [cases], tmp_path / "site")
    page = (tmp_path / "site" / "cases" / "skip_alias.html").read_text(encoding="utf-8")
    assert "as torch 2.13.0 spells it (cpu, eager)" in page
    assert "# torch 2.13.0\nskip = h\nh += b</code>" in page and "# torch 2.12.1" not in page
    assert ("No program of paddle is kept beside these results: <code>conformance show skip_alias --framework "
            "paddle</code> prints it") in page
    assert '<a href="skip_clone.html">' in page and "skip = h.clone()" in page  # the safe spelling, with its code
    index = (tmp_path / "site" / "search-index.js").read_text(encoding="utf-8")
    assert '"code":[["torch","# torch 2.13.0\\nskip = h\\nh += b\\n"]]' in index
    assert built.steps == 1 and (tmp_path / "site" / "upgrades" / "torch-2.12.1-2.13.0.html").is_file()


def test_a_rebuild_removes_the_pages_of_cases_that_are_gone_and_nothing_else(tmp_path: Path) -> None:
    files, cases = _small_matrix(tmp_path)
    output = tmp_path / "site"
    build_site(files, [cases], output)
    (output / "cases" / "gone.html").write_text(f"<!DOCTYPE html>\n{MARK}\n")
    (output / "cases" / "mine.html").write_text("<!DOCTYPE html>\n<p>not the site's</p>\n")
    built = build_site(files, [cases], output)
    assert built.removed == ["cases/gone.html"]
    assert (output / "cases" / "mine.html").is_file() and not (output / "cases" / "gone.html").exists()


# The real browser: headless Chromium driven by Selenium, through the system's chromedriver (never one that
# Selenium Manager would download).

def _browser_paths() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _driver(javascript: bool = True) -> Any:
    paths = _browser_paths()
    if paths is None:
        pytest.skip("no chromium/chromedriver: apt-get install chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (tox -e tests has it)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(executable_path=paths[1]), options=options)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = _driver()
    yield driver
    driver.quit()


def _wait(driver: Any, condition: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 30).until(condition)  # only a bound on a hang: nothing here is timed


def _index_entries(site: Path) -> dict[str, dict[str, Any]]:
    text = (site / "search-index.js").read_text(encoding="utf-8")
    entries = json.loads(text[text.index("["):text.rindex("]") + 1])
    return {e["id"]: e for e in entries}


def _matches(entry: dict[str, Any], query: str) -> bool:
    hay = " ".join([entry["id"], entry["title"], entry["cause"], entry["topic"], entry["topicTitle"],
                    *(code for _, code in entry["code"])]).lower()
    return all(word in hay for word in query.lower().split())


def _found(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [li.get_attribute("data-case") for li in driver.find_elements(By.CSS_SELECTOR, "#results > li")]


def test_the_search_narrows_to_the_cases_of_the_code_and_leads_to_the_grid(site: Path, browser: Any,
                                                                           records: dict) -> None:
    from selenium.webdriver.common.by import By

    entries = _index_entries(site)
    browser.get((site / "index.html").as_uri())
    catalogue = browser.find_elements(By.CSS_SELECTOR, "#catalogue li[data-case]")
    assert len(catalogue) == len(entries)
    box = browser.find_element(By.ID, "q")
    for query in ("from_numpy", "+="):
        box.clear()
        box.send_keys(query)
        _wait(browser, lambda d: f"\u201c{query}\u201d" in d.find_element(By.ID, "count").text)
        found = _found(browser)
        expected = {case for case, entry in entries.items() if _matches(entry, query)}
        assert set(found) == expected and 0 < len(found) < len(entries), query
        assert browser.find_element(By.ID, "results").is_displayed()
        assert not browser.find_element(By.ID, "catalogue").is_displayed()
        assert f"{len(found)} case" in browser.find_element(By.ID, "count").text
    first = found[0]
    browser.find_element(By.CSS_SELECTOR, "#results > li:first-child a").click()
    _wait(browser, lambda d: d.current_url.endswith(f"/cases/{first}.html"))
    assert browser.find_element(By.TAG_NAME, "h1").get_attribute("data-case") == first
    cells = browser.find_elements(By.CSS_SELECTOR, "td[data-outcome]")
    assert cells
    for cell in cells:
        key = (first, *(cell.get_attribute(f"data-{name}") for name in ("framework", "version", "mode", "device")))
        outcome = records[key].outcome
        assert cell.get_attribute("data-outcome") == outcome, key
        assert SYMBOLS[outcome] in cell.text and SHORT[outcome] in cell.text, key
        assert cell.get_attribute("title").startswith(f"{key[1]} {key[2]} · {key[4]} · {key[3]}: ")


@pytest.mark.parametrize(("query", "looked_for", "among"), [
    ("a.data *= 3", (".data", "*="), "data_imul_after_forward"),  # the reader's names and numbers, not the case's
    ("t.add_(1)", (".add_(",), "add_method_after_relu"),
    ("nn.ReLU(inplace=True)", (".relu(", "inplace="), "relu_inplace_saved_input"),
])
def test_a_query_is_read_as_code_whatever_the_reader_named_things(site: Path, browser: Any, query: str,
                                                                   looked_for: tuple[str, ...], among: str) -> None:
    """`a.data *= 3` finds the cases that write `x.data *= 3.0`: a name used as an object, a name alone and a
    number are the reader's own; an attribute, a call, a keyword and an augmented operator are the code."""
    from selenium.webdriver.common.by import By

    entries = _index_entries(site)
    if among not in entries:
        pytest.skip(f"{among} is not in the catalogue")
    browser.get((site / "index.html").as_uri())
    box = browser.find_element(By.ID, "q")
    box.send_keys(query)
    _wait(browser, lambda d: f"\u201c{query}\u201d" in d.find_element(By.ID, "count").text)
    found = _found(browser)
    assert among in found, (query, found[:10])
    assert set(found) == {case for case, entry in entries.items() if _matches(entry, " ".join(looked_for))}


def test_hand_written_cases_come_before_the_ones_the_fuzzer_found(site: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    entries = _index_entries(site)
    browser.get((site / "index.html").as_uri() + "?q=from_numpy")
    _wait(browser, lambda d: _found(d))
    generated = [entries[case]["generated"] for case in _found(browser)]
    assert generated[0] is False and generated == sorted(generated), generated
    assert "from_numpy_aliasing" in _found(browser)[:generated.count(False)]


def test_a_query_in_the_address_is_searched_for(site: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get((site / "index.html").as_uri() + "?q=retain_graph")
    _wait(browser, lambda d: _found(d))
    assert browser.find_element(By.ID, "q").get_attribute("value") == "retain_graph"
    entries = _index_entries(site)
    assert set(_found(browser)) == {case for case, entry in entries.items() if _matches(entry, "retain_graph")}


def test_without_javascript_every_case_is_listed_and_the_grid_reads(site: Path) -> None:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By

    driver = _driver(javascript=False)
    try:
        driver.get((site / "index.html").as_uri() + "?q=from_numpy")
        expected = len(_index_entries(site))
        listed = "#catalogue li[data-case] > a"  # a slow machine may still be laying out the long page
        try:
            _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, listed)) >= expected)
        except TimeoutException:
            pass  # the count below says how many there are
        links = driver.find_elements(By.CSS_SELECTOR, listed)
        assert len(links) == expected
        assert all(link.is_displayed() for link in links[:5])
        assert not driver.find_element(By.ID, "results").is_displayed()
        links[0].click()
        _wait(driver, lambda d: "/cases/" in d.current_url)
        cells = driver.find_elements(By.CSS_SELECTOR, "td[data-outcome]")
        assert cells and all(SYMBOLS[c.get_attribute("data-outcome")] in c.text for c in cells)
    finally:
        driver.quit()
