#!/usr/bin/env bash
# Runs every test: the unit, golden and integration suites in a normal build and under
# AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer target briefly. First it
# prints the functions over the house's size and complexity limits (scripts/complexity.sh).
# Python-side tests run twice in the default build: on Debian's PyTorch 1.13 and on PyTorch 2.x
# (the environment setup.sh makes; ctest label torch2).
# Usage: scripts/test.sh            (installs missing packages first; the real traces it reads are in tests/data/corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
# ccache (installed by setup.sh) with paths relative to the checkout: a fresh clone in another
# folder reuses what an earlier build on this machine compiled
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi

echo "== function size and complexity (a report, not a gate)"
scripts/complexity.sh

echo "== default build"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
ctest --preset default -j "$jobs"

echo "== ASan + UBSan build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"

echo "== fuzzers (${TT_FUZZ_SECONDS:-20} s each)"
cmake --preset fuzz -DTT_FUZZ_SECONDS="${TT_FUZZ_SECONDS:-20}" >/dev/null
cmake --build --preset fuzz -j "$jobs"
ctest --test-dir build-fuzz -j "$jobs" --output-on-failure --no-tests=error
