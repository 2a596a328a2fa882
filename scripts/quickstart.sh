#!/usr/bin/env bash
# The main job, on a fresh machine: install dependencies, build, import a real PyTorch-profiler
# trace (8 ranks of a DLRM run on V100s, from ../shared/data) into a tracetune trace, summarize
# it, and export it for the Perfetto UI. Outputs go to out/ (private to you).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tracetune -j "$(nproc)"
input=${1:-../shared/data/kineto/param/dlrm_8rank}
mkdir -p -m 0700 out
echo "== tracetune import $input"
build/cli/tracetune import "$input" -o out/trace.db
echo "== tracetune export out/trace.db --format chrome"
build/cli/tracetune export out/trace.db --format chrome -o out/trace.json
echo "Next: build/cli/tracetune info out/trace.db --json, or sqlite3 out/trace.db (docs/trace-format.md)"
