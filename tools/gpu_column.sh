#!/usr/bin/env bash
# The GPU column, on a machine with a GPU and no network: the catalogue on torch's GPU, eager and then
# compiled, written to OUTDIR (at most 8 files in all, each well under 16 MiB: two results files, their
# programs, the log, the reproducers' confirmations of the cells that differ from the CPU column, and the two
# baselines in OUTDIR/baselines), eager first, so that a run cut short still leaves a column.
#
#     tools/gpu_column.sh OUTDIR
#
# Needs torch with CUDA, NumPy, PyYAML, packaging, hypothesis, pytest and pytest-xdist installed; installs
# this project from this tree without the network (or runs it from the tree where pip cannot).  On a
# machine where no GPU is visible it stops at once with one line saying so, and exit status 3.  Each phase
# is bounded (EAGER_SECONDS, COMPILED_SECONDS, CONFIRM_SECONDS: 150, 210 and 90 by default, 7.5 minutes
# in all, so the whole stays under the 8 minutes the README promises); a phase cut short keeps every cell
# it finished (the run is stopped as Ctrl-C stops it).
#
# A rehearsal on a machine without a GPU runs the same commands on its CPU: DEVICE=cpu (and CASES=cases/seed
# for a few cases only); the test suite rehearses it so (tests/test_gpu_column.py).
set -uo pipefail
device=${DEVICE:-gpu}
cases=${CASES:-cases}

out=${1:-}
if [ -z "$out" ] || [ $# -ne 1 ]; then
  echo "usage: tools/gpu_column.sh OUTDIR" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
mkdir -p "$out" "$out/baselines" || { echo "error: cannot make $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
log="$out/log.txt"
: > "$log"
python=${PYTHON:-python3}

# Is there a GPU torch can use?  Said in one line, before anything else runs.
if ! seen=$(DEVICE=$device "$python" - 2>>"$log" <<'EOF'
import os
import sys
try:
    import torch
except Exception as exc:  # noqa: BLE001 - whatever stops the import stops the column
    print(f"no GPU column here: torch cannot be imported ({type(exc).__name__}: {exc})")
    sys.exit(3)
if os.environ["DEVICE"] == "cpu":
    print(f"a rehearsal on the CPU: torch {torch.__version__}")
    sys.exit(0)
if not torch.cuda.is_available():
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    print(f"no GPU is visible: torch.cuda.is_available() is False (torch {torch.__version__}, {build})")
    sys.exit(3)
print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)} ({torch.cuda.device_count()} GPU(s))")
EOF
); then
  echo "$seen" | tee -a "$log"
  exit 3
fi
echo "$seen" | tee -a "$log"

# The project, without the network: installed in place where pip can, else from the tree (its adapters are
# found without an installation: conformance.adapter.adapter_classes).
if ! "$python" -m pip install --no-deps --no-build-isolation --no-index -q -e . >>"$log" 2>&1; then
  echo "pip could not install the project: running it from the tree" | tee -a "$log"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
version=$("$python" -c "import torch; print(torch.__version__.split('+')[0])")
# What comes back from a GPU machine is at most 8 files in all: the two results files, their programs, the two
# baselines and the log.  The summaries (their outcomes are in the log too) stay behind.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cores=$(nproc 2>/dev/null || echo 2)
workers=$(( cores > 2 ? cores / 2 : 1 ))

phase() {  # phase NAME SECONDS MODE: one conformance run of the whole catalogue on the GPU
  local name=$1 seconds=$2 mode=$3 suffix
  suffix=$([ "$mode" = eager ] && echo "" || echo "-compiled")
  echo "== $name: torch $version $device $mode, $workers processes, at most ${seconds}s ($(date -u +%T))" | tee -a "$log"
  timeout --signal=INT --kill-after=30 "$seconds" \
    "$python" -m conformance.cli run "$cases" --framework torch --device "$device" --mode "$mode" -n "$workers" \
      --results "$out/torch-$version-$device$suffix.jsonl" --summary "$scratch/summary-$device$suffix.md" \
      --baselines "$out/baselines" --update-baselines >>"$log" 2>&1
  local status=$?
  echo "== $name: exit $status ($(date -u +%T))" | tee -a "$log"
  tail -n 12 "$log" | grep -E "^(torch|gpu|cpu|results|summary|error)" || true
}

phase eager "${EAGER_SECONDS:-150}" eager
if [ "$device" = gpu ]; then  # seed 004 as it was measured, on 10000 x 10000 (a few seconds)
  timeout 60 "$python" benchmarks/relu_memory.py 2>&1 | tee -a "$log"
fi
phase compiled "${COMPILED_SECONDS:-210}" compiled
# Every cell that differs from the committed CPU column of the same version, run again alone by its reproducer
# (conformance show, a fresh worker) on this device: OUTDIR/confirmations.txt.
echo "== confirmations ($(date -u +%T))" | tee -a "$log"
timeout --signal=INT --kill-after=20 "${CONFIRM_SECONDS:-90}" \
  "$python" tools/gpu_confirm.py "$out" --device "$device" --jobs "$workers" --paths "$cases" 2>&1 | tee -a "$log"
ls -l "$out" "$out/baselines" >>"$log"
echo "done: $out ($(ls "$out" | wc -l) entries)"
