#!/usr/bin/env bash
# The main job, on a fresh machine: install dependencies, build, and record a real PyTorch
# training job (samples/dataloader: a CNN trained on image files read and decoded from disk,
# with no DataLoader workers, so the step waits for data) under `tracetune record`. Prints
# what was recorded; the trace is out/dataloader.db (private to you).
# With an argument, imports that trace instead (Kineto JSON, a directory of ranks, or an
# nsys export), e.g.: scripts/quickstart.sh ../shared/data/kineto/param/dlrm_8rank
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tracetune tracetune_collector -j "$(nproc)"
mkdir -p -m 0700 out
if [ $# -gt 0 ]; then
  echo "== tracetune import $1"
  build/cli/tracetune import "$1" -o out/imported.db
  build/cli/tracetune export out/imported.db --format chrome -o out/imported.json
  exit 0
fi
[ -d out/data ] || /usr/bin/python3 samples/dataloader/make_dataset.py out/data --files 256
rm -f out/dataloader.db
echo "== tracetune record -o out/dataloader.db -- python3 samples/dataloader/train.py out/data --num-workers 0"
build/cli/tracetune record -o out/dataloader.db -- \
  /usr/bin/python3 samples/dataloader/train.py out/data --num-workers 0 --steps 40
echo
echo "== where the main thread waited for data (tracetune info shows the rest)"
sqlite3 -readonly out/dataloader.db "
  SELECT printf('steps %d, median step %.1f ms', count(*), 
                (SELECT dur FROM (SELECT (end_ns - start_ns) / 1e6 AS dur FROM steps ORDER BY dur LIMIT 1 OFFSET (SELECT count(*) / 2 FROM steps))))
  FROM steps;
  SELECT printf('waiting for the next batch: %.1f%% of the stepped time',
                100.0 * (SELECT sum(r.end_ns - r.start_ns) FROM ranges r JOIN strings s ON s.id = r.name_id
                         WHERE s.value = 'DataLoader: waiting for batch')
                      / (SELECT sum(end_ns - start_ns) FROM steps));
  SELECT printf('file reads: %d calls, %.1f MiB', count(*), sum(max(result, 0)) / 1048576.0)
  FROM io_calls WHERE op = 1;"
echo "Next: build/cli/tracetune export out/dataloader.db --format chrome -o out/dataloader.json (Perfetto UI)"
