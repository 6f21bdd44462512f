"""Benchmark: three questions a reader brings to the site, asked in a real browser, with the clicks and the
seconds each takes, and the load time of the site's pages from disk.

The questions, each from the page a reader starts on:

1. *What breaks when I port this code?*  On the index, type ``+=`` into the search box, open the first
   result, and read its paddle cell (the newest paddle version, cpu, eager).
2. *What changed between two releases?*  On the index, open the upgrade step torch 2.13.0 -> 2.14.1 and read
   its changed cells.
3. *A reproducer to file.*  On a case page with a silent-wrong cell, click that cell and read its evidence:
   the ``conformance show`` command and the expected values (and what the framework gave).

Headless Chromium, driven by Selenium through the system's chromedriver (``apt-get install chromium
chromium-driver``).  Page loads are the browser's own Navigation Timing (``loadEventEnd``), the median of
``--repeat`` loads.  A benchmark, run by hand, never a test: it asserts nothing.

    python benchmarks/site_questions.py [--site reports/site] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

#: What the page-load figures are taken on: the index, the largest case page, the upgrade steps, one step.
PAGES = ("index.html", "cases/residual_skip_alias_sees_iadd.html", "upgrades/index.html",
         "upgrades/torch-2.13.0-2.14.1.html")
#: The case page question 3 starts on (its torch cells are silent-wrong).
WRONG_CASE = "cases/data_imul_after_forward.html"


def browser() -> Any:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not found or not driver:
        sys.exit("no chromium/chromedriver: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = found
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def wait(driver: Any, condition: Any) -> Any:
    return WebDriverWait(driver, 60).until(condition)


def load_ms(driver: Any, url: str) -> tuple[float, float]:
    """(load event, DOMContentLoaded) in milliseconds after navigation start, as the browser measured them."""
    driver.get(url)
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")
    timing = wait(driver, lambda d: d.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return n && n.loadEventEnd > 0 ? [n.loadEventEnd, n.domContentLoadedEventEnd] : null;"))
    return float(timing[0]), float(timing[1])


def page_loads(driver: Any, site: Path, repeat: int) -> None:
    print(f"page loads from disk (file://), median of {repeat}:")
    for name in PAGES:
        loads = [load_ms(driver, (site / name).as_uri()) for _ in range(repeat)]
        load = statistics.median(t[0] for t in loads)
        ready = statistics.median(t[1] for t in loads)
        size = (site / name).stat().st_size / 1024
        print(f"  {name:45s} {size:7.1f} KB  load {load:6.1f} ms  (DOMContentLoaded {ready:6.1f} ms; "
              f"range {min(t[0] for t in loads):.1f}-{max(t[0] for t in loads):.1f} ms)")
    index = site / "search-index.js"
    print(f"  {'search-index.js (loaded by index.html)':45s} {index.stat().st_size / 1024:7.1f} KB")


def question(number: int, text: str, steps: str, clicks: int, typed: int, seconds: float, answer: list[str]) -> None:
    print(f"\nquestion {number}: {text}")
    print(f"  steps: {steps}")
    print(f"  clicks: {clicks}, queries typed: {typed}, seconds: {seconds:.2f}")
    for line in answer:
        print(f"  {line}")


def port(driver: Any, site: Path) -> None:
    start = time.perf_counter()
    driver.get((site / "index.html").as_uri())
    box = driver.find_element(By.ID, "q")
    box.send_keys("+=")
    wait(driver, lambda d: "\u201c+=\u201d" in d.find_element(By.ID, "count").text)
    count = driver.find_element(By.ID, "count").text
    first = driver.find_element(By.CSS_SELECTOR, "#results > li:first-child a")
    first.click()
    wait(driver, lambda d: "/cases/" in d.current_url)
    cells = driver.find_elements(By.CSS_SELECTOR, 'td[data-framework="paddle"][data-mode="eager"][data-device="cpu"]')
    cell = cells[-1]
    title = cell.get_attribute("title")
    seconds = time.perf_counter() - start
    case = driver.find_element(By.TAG_NAME, "h1").get_attribute("data-case")
    question(1, "what breaks when I port this code?",
             'open index.html; type "+=" into the search box; click the first result; read its paddle cell',
             1, 1, seconds, [f"search: {count}", f"first result: {case}",
                             f"paddle cell: {cell.get_attribute('data-version')} -> "
                             f"{cell.get_attribute('data-outcome')}", *(f"  {line}" for line in title.splitlines())])


def upgrade(driver: Any, site: Path) -> None:
    start = time.perf_counter()
    driver.get((site / "index.html").as_uri())
    driver.find_element(By.CSS_SELECTOR, 'a[data-step="torch-2.13.0-2.14.1"]').click()
    wait(driver, lambda d: d.current_url.endswith("/upgrades/torch-2.13.0-2.14.1.html"))
    sections = driver.find_elements(By.TAG_NAME, "h2")
    changes = driver.find_elements(By.CSS_SELECTOR, "tr[data-case]")
    seconds = time.perf_counter() - start
    answer = [f"{len(changes)} changed cells in {len(sections)} sections (device, mode): "
              + ", ".join(s.text for s in sections)]
    answer += [f"  {row.get_attribute('data-case')}: {row.get_attribute('data-old')} -> {row.get_attribute('data-new')}"
               for row in changes[:10]]
    question(2, "what changed between two releases?", "open index.html; click torch 2.13.0 → 2.14.1", 1, 0,
             seconds, answer)


def reproducer(driver: Any, site: Path) -> None:
    start = time.perf_counter()
    driver.get((site / WRONG_CASE).as_uri())
    cell = driver.find_element(By.CSS_SELECTOR, 'td[data-outcome="silent-wrong"]')
    where = " ".join(cell.get_attribute(f"data-{k}") for k in ("framework", "version", "device", "mode"))
    cell.find_element(By.TAG_NAME, "a").click()
    wait(driver, lambda d: "#e-" in d.current_url)
    row = driver.find_element(By.ID, driver.current_url.split("#", 1)[1])
    command = row.find_element(By.CSS_SELECTOR, "code.cmd").text
    values = [li.text for li in row.find_elements(By.CSS_SELECTOR, "li[data-observation]")]
    seconds = time.perf_counter() - start
    question(3, "a reproducer to file", f"open {WRONG_CASE}; click its first silent-wrong cell; read its evidence",
             1, 0, seconds, [f"cell: {where}", f"command (run with that version installed): {command}",
                             *(f"expected: {v}" for v in values)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="reports/site", help="the site's folder [%(default)s]")
    parser.add_argument("--repeat", type=int, default=5, help="loads per page [%(default)s]")
    args = parser.parse_args()
    site = Path(args.site).resolve()
    if not (site / "index.html").is_file():
        sys.exit(f"no site in {site}: run `conformance site` first")
    driver = browser()
    try:
        driver.get((site / "index.html").as_uri())  # the browser's own start-up, before anything is timed
        page_loads(driver, site, args.repeat)
        port(driver, site)
        upgrade(driver, site)
        reproducer(driver, site)
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
