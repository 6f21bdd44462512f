"""Run one cell (case x framework x device) end to end and build its result record.

Execution happens in a worker; judging (reference, comparison, outcome) happens
here, in the parent, so every framework is judged by the same code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from conformance.adapter import adapter_classes, installed_version, is_installed
from conformance.case.load import Case
from conformance.judge.classify import classify
from conformance.workers.pool import WorkerCrashed, WorkerPool, WorkerTimeout
from conformance.records.results import run_info

__all__ = ["Engine", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 120.0
#: The pool's name for the reference service (never a framework's name: it has no adapter).
REFERENCE_SERVICE = "reference"


class Engine:
    def __init__(self, pool: WorkerPool | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.pool = pool or WorkerPool()
        self.timeout = timeout
        self._references: dict[tuple[str, str], tuple[dict | None, str | None]] = {}

    def _timeout(self, case: Case) -> float:
        """A case's own timeout, capped by the run's."""
        return min(case.timeout, self.timeout) if case.timeout else self.timeout

    def reference(self, case: Case) -> tuple[dict | None, str | None, str | None]:
        """The reference observations of *case*, or why the reference cannot give them.

        Returns (observations, failure, harness_error): *failure* means the case is
        ill-posed for the reference; *harness_error* that the reference went past
        its limits or broke.  Computed once per case, in the reference service.
        """
        key = (case.path, case.id)
        if key not in self._references:
            self._references[key] = self._ask_reference(case)
        return self._references[key]

    def _ask_reference(self, case: Case) -> tuple[dict | None, str | None, str | None]:
        limit = self._timeout(case)
        try:
            service = self.pool.get(REFERENCE_SERVICE, module="conformance.judge.service")
            reply = service.request({"time_limit": limit, **case.to_message()}, limit + 5)
        except WorkerTimeout:
            self.pool.discard(REFERENCE_SERVICE)
            return None, None, f"the reference did not finish within the cell's limit of {limit:g} s"
        except WorkerCrashed as exc:
            self.pool.discard(REFERENCE_SERVICE)
            return None, None, f"the reference process died ({exc}); it runs under a memory limit"
        if reply.get("status") == "ok":
            return reply["observations"], None, None
        if reply.get("status") == "failed":
            return None, reply["message"], None
        return None, None, reply.get("message", "the reference service gave no answer")

    def run_cell(self, case: Case, framework: str, device: str, mode: str = "eager") -> dict[str, Any]:
        started = time.perf_counter()
        worker_info: dict[str, Any] | None = None
        version = "not installed"
        cls = adapter_classes().get(framework)
        if cls is None:
            reply: dict[str, Any] = {"status": "error", "message": f"no adapter named {framework!r}"}
        elif not is_installed(cls):
            reply = {"status": "skipped", "reason": f"{framework} is not installed "
                                                     f"(no module {cls.import_name!r})"}
        else:
            version = installed_version(cls) or "unknown"
            reply, worker_info = self._execute(case, framework, device, mode)
            if worker_info:
                version = worker_info["framework_version"]
        reference, reference_error = None, None
        if reply["status"] in ("completed", "raised"):  # only a result needs judging
            reference, reference_error, harness_error = self.reference(case)
            if harness_error is not None:
                reply = {"status": "error", "message": harness_error}
        outcome, details = classify(case, reply, reference, reference_error)
        return {
            "case": case.id,
            "case_file": case.path,
            "topic": case.topic,
            "title": case.title,
            "framework": framework,
            "framework_version": version,
            "device": device,
            "mode": mode,
            "outcome": outcome,
            "details": details,
            "timings": {"cell_seconds": round(time.perf_counter() - started, 4),
                        "run_seconds": reply.get("run_seconds"),
                        "worker_import_seconds": worker_info.get("import_seconds") if worker_info else None},
            "run_info": run_info(Path(case.path).parent, worker_info, device),
        }

    def _execute(self, case: Case, framework: str, device: str, mode: str) -> tuple[dict[str, Any], dict | None]:
        timeout = self._timeout(case)
        try:
            worker = self.pool.get(framework)
        except WorkerCrashed as exc:
            return {"status": "crash", "message": f"the {framework} worker died while starting: {exc}",
                    "signal": exc.signal, "returncode": exc.returncode, "output": exc.output}, None
        except WorkerTimeout as exc:
            self.pool.discard(framework)
            return {"status": "timeout", "message": f"the {framework} worker did not start: {exc}"}, None
        info = worker.info
        problem = (info.get("devices") or {}).get(device)
        if problem:
            return {"status": "skipped", "reason": problem}, info
        try:
            reply = worker.request({"cmd": "run", "device": device, "mode": mode, **case.to_message()},
                                   timeout)
        except WorkerCrashed as exc:
            self.pool.discard(framework)
            return {"status": "crash", "signal": exc.signal, "returncode": exc.returncode,
                    "message": str(exc), "output": exc.output}, info
        except WorkerTimeout:
            self.pool.discard(framework)
            return {"status": "timeout", "message": f"no result within {timeout:g} s; worker killed",
                    "timeout_seconds": timeout}, info
        except Exception as exc:  # noqa: BLE001 - never leave a worker with an unread reply
            self.pool.discard(framework)
            return {"status": "error", "message": f"talking to the {framework} worker: "
                                                  f"{type(exc).__name__}: {exc}"}, info
        return reply, info
