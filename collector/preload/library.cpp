// The constructor of libtracetune_collector.so: the order in which its parts start. The writer
// first reads its options; the window control page is mapped before the first event record; the
// record file, the fork/exit handlers (process_hooks.cpp), and the flight recorder's dump signal
// (dump_signal.cpp) follow.
#include <cerrno>

#include "dump_signal.h"
#include "window.h"
#include "writer.h"

namespace tt::collector {
namespace {

__attribute__((constructor)) void tracetune_collector_init() {
  const int saved_errno = errno;
  if (configure_from_environment()) {
    window_attach(output_dir());  // before the first event record
    if (start_recording()) {
      install_process_handlers();
      // record --ring: a signal asks for a dump
      if (std::int32_t signo = 0; g_window_control != nullptr && env_int("TRACETUNE_DUMP_SIGNAL", &signo))
        dump_signal_install(signo);
      finish_start();
    }
  }
  errno = saved_errno;
}

}  // namespace
}  // namespace tt::collector
