"""A worker without a framework, for testing the pool: ``python -m tests.fake_worker NAME``.

It speaks the workers' protocol (a hello line, then one reply per request, in order, echoing the
request's id) and does what each request says: ``echo`` (reply at once), ``sleep`` (for ``seconds``),
``crash`` (kill itself with SIGKILL), ``garbage`` (write a line that is not JSON).  Every reply says
which process answered and whether the request carried its case.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from conformance.workers.pool import ParentLines, bind_to_parent


def main() -> int:
    bind_to_parent()
    requests = ParentLines(sys.stdin.buffer)
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    time.sleep(float(os.environ.get("FAKE_WORKER_START_SECONDS", "0")))
    out.write(json.dumps({"framework": sys.argv[1], "framework_version": "0", "pid": os.getpid()}) + "\n")
    for line in requests:
        request = json.loads(line)
        command = request.get("cmd")
        if command == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if command == "sleep":
            time.sleep(float(request["seconds"]))
        if command == "garbage":
            out.write("this is not a reply\n")
            continue
        reply = {"status": "ok", "pid": os.getpid(), "label": request.get("label"),
                 "had_case": "case" in request, "case_key": request.get("case_key")}
        if "id" in request:
            reply["id"] = request["id"]
        out.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
