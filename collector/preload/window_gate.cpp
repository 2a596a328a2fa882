// The job's window control page (window_gate.h).
#include "window_gate.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cstring>

#include "sys.h"

namespace tt::collector {

WindowControl* g_window_control = nullptr;

WindowControl* map_window_control(const char* out_dir) {
  char path[4096];
  const std::size_t n = std::strlen(out_dir);
  const std::size_t m = std::strlen(kWindowControlName);
  if (n + 1 + m + 1 > sizeof path) return nullptr;
  std::memcpy(path, out_dir, n);
  path[n] = '/';
  std::memcpy(path + n + 1, kWindowControlName, m + 1);
  const int fd = sys_openat(AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return nullptr;  // no window: record everything
  void* p = sys_mmap(nullptr, sizeof(WindowControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  sys_close(fd);
  if (p == MAP_FAILED) return nullptr;
  auto* w = static_cast<WindowControl*>(p);
  if (std::memcmp(w->magic, kWindowControlMagic, sizeof kWindowControlMagic) != 0 ||
      w->version != kWindowControlVersion) {
    sys_munmap(p, sizeof(WindowControl));
    return nullptr;
  }
  g_window_control = w;
  return w;
}

}  // namespace tt::collector
