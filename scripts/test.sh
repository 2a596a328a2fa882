#!/usr/bin/env bash
# Runs every test: the unit, golden and integration suites in a normal build and under
# AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer target briefly.
# Usage: scripts/test.sh            (installs missing packages first; needs ../shared beside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

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
