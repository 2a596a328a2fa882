// The flight recorder's dump signal (record --ring --dump-signal, dump_signal.cpp).
#pragma once

namespace tt::collector {

// Installs the flight recorder's handler for `signo` underneath the job's own disposition
// (library.cpp, at start, when the job has a window control page).
void dump_signal_install(int signo);

}  // namespace tt::collector
