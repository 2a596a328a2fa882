#!/bin/sh
# The search with and without its cheaper-search features on the DataLoader-bound sample
# (CPU), run one after the other in one invocation, ROUNDS times alternating the order:
#   A "full":  --early-stop 0   (every trial runs all its steps: the search as it was)
#   B "cheap": --early-stop 1.5 (trials clearly slower than the best end after 3 steps)
# Both: the same trial budget, steady-state warm-up, no confirmation (--confirm 0), so only the
# search's own cost differs. Prints per run: the choice, trials-to-best (the index of the
# chosen trial), trials, trial-steps and wall time; then the medians of B/A. Figures only.
#   bench/tune_search_compare.sh [BUILD_DIR] [ROUNDS] [MAX_TRIALS]
set -eu
build=${1:-build}
rounds=${2:-2}
max_trials=${3:-10}
py=/usr/bin/python3
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py "$here/samples/dataloader/make_dataset.py" "$tmp/data" --files 256 >/dev/null
cd "$tmp"
run() {  # run NAME EARLY_STOP ROUND
  start=$(date +%s.%N)
  "$here/$build/cli/tracetune" tune -q --steps 15 --warmup 3 --max-trials "$max_trials" --confirm 0 \
    --early-stop "$2" -o "$tmp/$1-$3.toml" -- \
    $py "$here/samples/dataloader/train.py" "$tmp/data" --num-workers 0 --batch-size 16 --steps 100000 >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$1 $3 $start $end" >> "$tmp/runs"
}
r=1
while [ "$r" -le "$rounds" ]; do
  if [ $((r % 2)) -eq 1 ]; then run full 0 "$r"; run cheap 1.5 "$r"; else run cheap 1.5 "$r"; run full 0 "$r"; fi
  r=$((r + 1))
done
$py - "$tmp" <<'PY'
import json, statistics, sys, pathlib
tmp = pathlib.Path(sys.argv[1])
rows = {"full": [], "cheap": []}
print(f"{'search':6} {'round':>5} {'choice':34} {'to best':>7} {'trials':>6} {'early':>5} {'trial-steps':>11} {'wall s':>7} {'speedup':>7}")
for line in (tmp / "runs").read_text().split("\n"):
    if not line:
        continue
    name, rnd, start, end = line.split()
    doc = json.loads((tmp / f"{name}-{rnd}.trials.json").read_text())
    best = doc["trials"][doc["best_trial"]]
    choice = ",".join(f"{k.split('.')[-1]}={v}" for k, v in best["settings"].items()) or "baseline"
    early = sum(1 for t in doc["trials"] if t.get("stopped_early"))
    wall = float(end) - float(start)
    rows[name].append((doc["best_trial"], len(doc["trials"]), doc["trial_steps"], wall))
    print(f"{name:6} {rnd:>5} {choice:34} {doc['best_trial']:>7} {len(doc['trials']):>6} {early:>5} {doc['trial_steps']:>11} "
          f"{wall:>7.1f} {doc['speedup']:>7.3f}")
med = lambda name, i: statistics.median(r[i] for r in rows[name])
for i, what in ((0, "trials-to-best"), (2, "trial-steps"), (3, "wall time")):
    a, b = med("full", i), med("cheap", i)
    print(f"median {what}: full {a:.1f}, cheap {b:.1f}, cheap/full {b / a if a else float('nan'):.2f}")
PY
