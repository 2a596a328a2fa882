// The flight recorder of N steps inside the job (record --ring Nsteps, docs/collector.md §9.3):
// each stepping process keeps the starts of its last N Step records and publishes, in its record
// file's header, where the N-th last one starts (its cut). A dump keeps that process's events from
// its cut on, and a process without steps its events from the earliest cut of its host: the
// launcher removes the files of ended processes that end before that (collector/src/window.cpp).
#pragma once

#include <cstdint>

namespace tt::collector {

// A Step record (StepKind::Step) starting at start_ns was written. Without TRACETUNE_RING_STEPS it
// does nothing. Takes a spin lock (steps come from the job's threads, never from a signal handler);
// the first call of a process maps N words of anonymous memory.
void ring_step_written(std::int64_t start_ns);

// In a fork child, before it runs anything else (process_hooks.cpp): its count starts from none,
// and the lock, which a parent thread may have held at the fork, is free.
void ring_steps_forked();

}  // namespace tt::collector
