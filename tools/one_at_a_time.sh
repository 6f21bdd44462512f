#!/usr/bin/env bash
# Run framework versions one at a time: each tox env named (torch21, paddle331, ...; eager, then compiled,
# on one install), then remove that install, so that the disk holds one framework (a torch build from PyPI
# is 4-7 GB) at a time.  Arguments after -- go to `conformance run`
# (e.g. --update-baselines for a version recorded for the first time).
#   tools/one_at_a_time.sh torch20 torch21 torch22 -- --update-baselines
# Exit status: 0 when every env passed, else 1 (each env is still tried); the failed envs are listed.
set -uo pipefail
cd "$(dirname "$0")/.."
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ "${#envs[@]}" -eq 0 ]; then
  echo "usage: tools/one_at_a_time.sh ENV... [-- conformance run arguments]" >&2
  exit 2
fi
tox=${TOX:-.venv/bin/tox}
failed=()
for env in "${envs[@]}"; do
  dir=$("$tox" config -e "$env" -k env_dir 2>/dev/null | sed -n 's/^env_dir = //p')
  if [ -z "$dir" ]; then
    echo "no tox env $env" >&2
    failed+=("$env"); continue
  fi
  echo "== $env ($(date -u +%H:%M:%S))"
  "$tox" -e "$env" -- "$@" || failed+=("$env")
  rm -rf -- "$dir"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
