#!/usr/bin/env bash
# The house's size and complexity report (a report, never a gate): every function over 100 lines
# or over cyclomatic complexity 30 in the product's C++ (analyzer, trace, tuner, collector,
# gui/app), measured by lizard (installed by scripts/setup.sh).
# Usage: scripts/complexity.sh      (prints the functions over the limits, then a count)
set -uo pipefail
cd "$(dirname "$0")/.."
lizard="${TT_TOOLS_VENV:-$HOME/.cache/tracetune/tools}/bin/lizard"
if [ ! -x "$lizard" ]; then
  echo "complexity: lizard not installed (scripts/setup.sh installs it): report left out"
  exit 0
fi
over=$("$lizard" --length 100 --CCN 30 --warnings_only analyzer trace tuner collector gui/app 2>/dev/null |
       grep ': warning: ' | sed "s|^$PWD/||")
if [ -z "$over" ]; then
  echo "complexity: no function over 100 lines or CCN 30 in analyzer, trace, tuner, collector, gui/app"
else
  echo "$over"
  echo "complexity: $(echo "$over" | wc -l) functions over 100 lines or CCN 30 (the house's limits; a report, not a gate)"
fi
