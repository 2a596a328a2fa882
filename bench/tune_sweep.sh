#!/bin/sh
# The tuner against an exhaustive num_workers sweep on the DataLoader-bound sample (CPU),
# measured side by side in one `tracetune tune --exhaustive` run: prints the tuner's choice,
# its speedup over the baseline, the best value of the full sweep and the ratio. Figures only.
#   bench/tune_sweep.sh [BUILD_DIR] [FILES] [STEPS]
set -eu
build=${1:-build}
files=${2:-256}
steps=${3:-15}
py=/usr/bin/python3
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py "$here/samples/dataloader/make_dataset.py" "$tmp/data" --files "$files" >/dev/null
cd "$tmp"
"$here/$build/cli/tracetune" tune --steps "$steps" --warmup 3 --max-trials 12 --exhaustive dataloader.num_workers \
  -o "$tmp/tuned.toml" -- $py "$here/samples/dataloader/train.py" "$tmp/data" --num-workers 0 --batch-size 16 --steps 100000
