#!/usr/bin/env bash
# Installs everything tracetune needs to build and test on Debian 12 (and derivatives):
# Debian's packages, then PyTorch 2.x from PyPI in a virtual environment of its own for the
# torch2 test pass (tests/CMakeLists.txt). Idempotent: installs only what is missing, so
# repeated runs (and CI) are quick. TT_SKIP_TORCH2=1 skips the PyTorch 2.x environment.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  clang libclang-rt-14-dev clang-format clang-tidy
  libsqlite3-dev sqlite3 libsimdjson-dev libfmt-dev libcli11-dev libtomlplusplus-dev
  libdeflate-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy python3-venv ccache
  qt6-base-dev libqt6opengl6-dev libgl-dev fonts-dejavu-core
  xvfb xauth libgl1-mesa-dri libglx-mesa0
  chromium python3-pil
  openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyTorch 2.x, the version the GPU machines run, from PyPI (its CUDA 13 wheel and nvidia-*
# wheels, laid out as on those machines; it runs on the CPU here). The environment lives
# outside the checkout so that every clone on this machine reuses it; a stamp file marks a
# complete install (an interrupted one is made again). First install here: about 1.5 min, 4.7 GB.
torch2_version=2.11.0
venv="${TT_TORCH2_VENV:-$HOME/.cache/tracetune/torch-$torch2_version}"
if [ "${TT_SKIP_TORCH2:-0}" = 1 ]; then
  echo "setup: PyTorch $torch2_version environment skipped (TT_SKIP_TORCH2=1): Python-side tests run on torch 1.13 only"
elif [ -f "$venv/.tracetune-complete" ]; then
  echo "setup: PyTorch $torch2_version environment present ($venv)"
else
  echo "setup: installing PyTorch $torch2_version from PyPI into $venv (once per machine)"
  start=$(date +%s)
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "torch==$torch2_version" numpy
  "$venv/bin/python" -c "import torch; assert torch.__version__.startswith('$torch2_version'), torch.__version__"
  touch "$venv/.tracetune-complete"
  echo "setup: PyTorch $torch2_version installed in $(( $(date +%s) - start )) s ($(du -sh "$venv" | cut -f1))"
fi

# Tools the test run reports with (not gates): lizard, for the function size and complexity
# report at the end of scripts/test.sh (scripts/complexity.sh). A small venv beside PyTorch's.
tools="${TT_TOOLS_VENV:-$HOME/.cache/tracetune/tools}"
lizard_version=1.17.10
if [ ! -f "$tools/.lizard-$lizard_version" ]; then
  rm -rf "$tools"
  mkdir -p "$(dirname "$tools")"
  if /usr/bin/python3 -m venv "$tools" &&
     "$tools/bin/pip" install --quiet --disable-pip-version-check "lizard==$lizard_version"; then
    touch "$tools/.lizard-$lizard_version"
  else
    echo "setup: lizard could not be installed from PyPI: the complexity report will be left out"
  fi
fi
