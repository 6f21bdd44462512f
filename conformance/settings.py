"""Defaults shared by the pytest plugin and the command line (importing neither)."""

DEVICES = ("cpu", "gpu")
DEFAULT_RESULTS = "reports/results/latest.jsonl"
DEFAULT_SUMMARY = "reports/summary.md"
DEFAULT_BASELINES = "reports/baselines"
