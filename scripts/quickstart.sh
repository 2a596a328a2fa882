#!/usr/bin/env bash
# The main job, on a fresh machine: install dependencies, build, and record a real PyTorch
# training job (samples/dataloader: a CNN trained on image files read and decoded from disk,
# with no DataLoader workers, so the step waits for data) under `tracetune record`, then
# `tracetune analyze` names the bottleneck; the trace is out/dataloader.db (private to you).
# With an argument, imports and analyzes that trace instead (Kineto JSON, a directory of ranks, or an
# nsys export), e.g.: scripts/quickstart.sh tests/data/corpus/kineto/param/dlrm_8rank
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tracetune tracetune_collector -j "$(nproc)"
mkdir -p -m 0700 out
if [ $# -gt 0 ]; then
  echo "== tracetune import $1"
  build/cli/tracetune import "$1" -o out/imported.db
  echo "== tracetune analyze out/imported.db"
  build/cli/tracetune analyze out/imported.db
  exit 0
fi
[ -d out/data ] || /usr/bin/python3 samples/dataloader/make_dataset.py out/data --files 256
rm -f out/dataloader.db
echo "== tracetune record -o out/dataloader.db -- python3 samples/dataloader/train.py out/data --num-workers 0"
build/cli/tracetune record -o out/dataloader.db -- \
  /usr/bin/python3 samples/dataloader/train.py out/data --num-workers 0 --steps 40
echo
echo "== tracetune analyze out/dataloader.db"
build/cli/tracetune analyze out/dataloader.db
echo "Next: build/cli/tracetune analyze out/dataloader.db --format json (for tools), or"
echo "      build/cli/tracetune export out/dataloader.db --format chrome -o out/dataloader.json (Perfetto UI)"
