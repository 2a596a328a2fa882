// record --ring Nsteps: this process's last N step starts and the cut it publishes (ring_steps.h).
#include "ring_steps.h"

#include <sys/mman.h>

#include <mutex>

#include "sys.h"
#include "writer.h"

namespace tt::collector {
namespace {

constexpr std::int64_t kMaxRingSteps = 1'000'000;  // record --ring's limit

// The starts of the last N Step records, in the order they were written (a circle of N slots).
struct StepStarts {
  std::int64_t n = -1;              // TRACETUNE_RING_STEPS; -1: not read yet, 0: no step ring
  std::int64_t* slots = nullptr;    // n words, mapped at the first step (a fork child reuses its copy)
  std::int64_t written = 0;
};
StepStarts g_starts;
SpinLock g_starts_lock;

std::int64_t ring_steps_asked() {
  std::int32_t n = 0;
  return env_int("TRACETUNE_RING_STEPS", &n) && n > 0 && n <= kMaxRingSteps ? n : 0;
}

bool ready(StepStarts& s) {
  if (s.n < 0) s.n = ring_steps_asked();
  if (s.n == 0) return false;
  if (s.slots == nullptr) {
    void* p = sys_mmap(nullptr, static_cast<std::size_t>(s.n) * sizeof(std::int64_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      s.n = 0;  // no memory: no cut published, so the launcher removes nothing on this host
      return false;
    }
    s.slots = static_cast<std::int64_t*>(p);
  }
  return true;
}

}  // namespace

void ring_step_written(std::int64_t start_ns) {
  std::lock_guard<SpinLock> held(g_starts_lock);
  StepStarts& s = g_starts;
  if (!ready(s)) return;
  s.slots[s.written % s.n] = start_ns;
  ++s.written;
  // the oldest of the last n starts is in the slot the next one will take
  publish_ring_steps(s.written, s.written >= s.n ? s.slots[s.written % s.n] : 0);
}

void ring_steps_forked() {
  g_starts_lock.reset();
  g_starts.written = 0;  // the slots, if mapped, are this process's private copy: reused
}

}  // namespace tt::collector
