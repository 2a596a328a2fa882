#!/usr/bin/env bash
# Installs everything tracetune needs to build and test on Debian 12 (and derivatives).
# Idempotent: installs only what is missing, so repeated runs (and CI) are quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3
  clang libclang-rt-14-dev clang-format clang-tidy
  libsqlite3-dev sqlite3 libsimdjson-dev libfmt-dev libcli11-dev libtomlplusplus-dev
  libdeflate-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-numpy
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
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
