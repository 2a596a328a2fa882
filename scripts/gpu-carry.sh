#!/usr/bin/env bash
# Builds the install tree that travels to a GPU machine (CMake preset `gpu-carry`): tracetune,
# the collector, the CUPTI injection library, both NCCL plugins, the Python integration and the
# CUDA C++ sample, with the non-system shared libraries tracetune links (fmt, simdjson,
# toml++, SQLite, libdeflate, zlib) copied into gpu-carry/lib and found through an $ORIGIN rpath.
# No Qt, no tests. Then checks that nothing but the C/C++ runtime and CUDA is left to find.
# Usage: scripts/gpu-carry.sh            -> ./gpu-carry (ignored by git; well under 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset gpu-carry >/dev/null
cmake --build --preset gpu-carry -j "$(nproc)" >/dev/null
# what the machine must still provide: glibc, libstdc++ and the CUDA libraries it has anyway
allowed='^(linux-vdso|(/lib64/)?ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)'
missing=0
# every library tracetune and what it injects need is carried, or is the machine's own
for f in gpu-carry/bin/tracetune gpu-carry/lib/tracetune/*.so gpu-carry/libexec/tracetune/*; do
  while read -r lib; do
    [[ "$lib" =~ $allowed ]] || [ -e "gpu-carry/lib/$lib" ] || { echo "gpu-carry: $f needs $lib, which is not carried" >&2; missing=1; }
  done < <(objdump -p "$f" | awk '/NEEDED/ {print $2}')
done
[ "$missing" = 0 ] || exit 1
# the newest glibc / libstdc++ symbol versions the tree needs: the GPU machine must have these
needs=$(find gpu-carry -type f \( -name '*.so*' -o -perm -u+x \) -exec objdump -T {} + 2>/dev/null |
        grep -o 'GLIBC_[0-9.]*\|GLIBCXX_[0-9.]*' | sort -uV | awk -F_ '{v[$1]=$0} END {print v["GLIBC"], v["GLIBCXX"]}')
echo "gpu-carry: $(du -sh gpu-carry | cut -f1) in gpu-carry/ ($(find gpu-carry -type f | wc -l) files), needs $needs;" \
     "on the GPU machine: scripts/gpu-check.sh"
