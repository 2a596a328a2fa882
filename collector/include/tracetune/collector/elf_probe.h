// Whether a program can be reached by LD_PRELOAD: a statically linked executable (an ELF file
// without a PT_INTERP program header: no dynamic loader runs, static-pie included) cannot.
// Shared by the launcher (the job's own program, before it starts) and the injected library
// (a program the job execs). Header-only, no allocation, no exceptions: the caller supplies
// pread (the library passes its raw syscall).
#pragma once

#include <cstdint>
#include <cstring>

namespace tt::collector::elf {

enum class Linking { NotElf, Dynamic, Static };

// Reads the ELF header and the program headers' types through
// `pread(void* buf, std::size_t n, std::uint64_t offset) -> long` (bytes read).
// 64-bit little-endian ELF only (what we build for); anything else is NotElf.
template <class Pread>
Linking linking(Pread&& pread) {
  unsigned char ehdr[64] = {};
  if (pread(ehdr, sizeof ehdr, 0) != static_cast<long>(sizeof ehdr)) return Linking::NotElf;
  if (std::memcmp(ehdr, "\x7f" "ELF", 4) != 0 || ehdr[4] != 2 /* ELFCLASS64 */ || ehdr[5] != 1 /* LSB */)
    return Linking::NotElf;
  std::uint64_t phoff = 0;
  std::uint16_t phentsize = 0, phnum = 0;
  std::memcpy(&phoff, ehdr + 32, 8);
  std::memcpy(&phentsize, ehdr + 54, 2);
  std::memcpy(&phnum, ehdr + 56, 2);
  if (phentsize < 4 || phnum == 0) return Linking::NotElf;  // not an executable image
  for (std::uint16_t i = 0; i < phnum && i < 256; ++i) {
    std::uint32_t type = 0;
    if (pread(&type, 4, phoff + std::uint64_t{i} * phentsize) != 4) return Linking::NotElf;
    if (type == 3 /* PT_INTERP */) return Linking::Dynamic;
  }
  return Linking::Static;
}

}  // namespace tt::collector::elf
