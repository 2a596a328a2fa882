#!/bin/sh
# The tune runs bench/calibration.md is made of: 3 CPU jobs, each tuned ROUNDS times with a
# confirmation (the settings of tests/integration/tune_test.py: 12 steps, 3 warm-up, 6 trials,
# 3 interleaved pairs). Each run keeps its trials file and its baseline trace, so the analyzer's
# prediction can be recomputed from the same baseline by another build:
#   bench/calibration_runs.sh [BUILD_DIR] [OUT_DIR] [ROUNDS]
#   bench/calibration.py --rescore BUILD_DIR OUT_DIR/*/tuned.trials.json
# Figures only (the machine's load moves every measurement).
set -eu
build=${1:-build}
out=${2:-/tmp/tt_calibration}
rounds=${3:-3}
py=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")/.." && pwd)
tt="$here/$build/cli/tracetune"
mkdir -p "$out"
[ -d "$out/data" ] || $py "$here/samples/dataloader/make_dataset.py" "$out/data" --files 256 >/dev/null

tune_one() {  # NAME -- JOB...
  name=$1; shift 2
  dir="$out/$name"
  mkdir -p "$dir/tmp"
  echo "$(date -u +%H:%M:%S) $name: $*" >> "$out/commands.log"
  (cd "$dir" && TMPDIR="$dir/tmp" "$tt" tune -q --keep-traces --steps 12 --warmup 3 --max-trials 6 --confirm 3 \
     --trial-timeout 90 -o "$dir/tuned.toml" -- "$@" > "$dir/tune.log" 2>&1) || echo "$name: tune failed" >> "$out/commands.log"
  base=$(ls -d "$dir"/tmp/tracetune-tune-*/trial-000 2>/dev/null | head -1)
  [ -n "$base" ] && cp "$base/trace.db" "$dir/baseline.db"
  rm -rf "$dir/tmp"
}

r=1
while [ "$r" -le "$rounds" ]; do
  tune_one "decode_b16_r$r" -- $py "$here/samples/dataloader/train.py" "$out/data" --num-workers 0 --batch-size 16 --steps 100000
  tune_one "io_b8_r$r" -- $py "$here/bench/calibration_io_job.py" --batch-size 8 --num-workers 0
  tune_one "decode_b32_t2_r$r" -- $py "$here/samples/dataloader/train.py" "$out/data" --num-workers 0 --batch-size 32 \
    --threads 2 --steps 100000
  r=$((r + 1))
done
