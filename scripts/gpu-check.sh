#!/usr/bin/env bash
# The one-command GPU check: records, checks and measures every GPU path of tracetune on a
# real GPU (stages and options: scripts/gpu-check.sh --help; docs/gpu-check.md). Run it on the
# GPU machine from the repository root after building the carry tree (scripts/gpu-carry.sh).
# Without a GPU it says so in one line and exits 3.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/gpu_check.py "$@"
