// Epochs of a DataLoader job, from the Python integration's "tracetune.epoch <JSON>" ranges
// (one over each `iter(loader)` on the main thread: where workers not kept alive are forked),
// and what keeping the workers alive (persistent_workers) would save: the wait at each later
// epoch's start beyond a steady step.
#pragma once

#include <cstddef>

#include "tracetune/trace/model.h"

namespace tt::analyzer {

struct EpochFacts {
  std::size_t epochs = 0;          // epoch ranges on the busiest track
  double steps_per_epoch = 0;      // median steps between consecutive epoch starts (complete epochs)
  int workers = 0;                 // the loader's workers (the first epoch's)
  bool persistent = false;         // its workers are kept alive between epochs
  int prefetch = 0;                // batches each worker loads ahead (0: no workers, or a trace without the field)
  int threads = 0;                 // the process's intra-op threads at the first epoch (0: not recorded)
  double step_ms = 0;              // median step
  // Each epoch after the first: its iter() call plus its first step, less a median step (>= 0):
  // the re-fork of workers and their first batch. Summed, and the largest single one.
  double restart_wait_ms = 0;
  double largest_restart_ms = 0;
  std::size_t restarts = 0;        // epochs after the first with a step after their start
  double run_ms = 0;               // the steps and epoch starts measured (the run the waits are part of)
  // What persistent workers would save on this run: the restart waits, only when the loader
  // has workers that are not kept alive (0 otherwise); never more than the waits measured.
  double persistent_saving_ms() const { return workers > 0 && !persistent ? restart_wait_ms : 0; }
  // The speedup of the run that saving predicts: run / (run - saving), 1 when none.
  double persistent_speedup() const;
};

EpochFacts epoch_facts(const trace::Trace& t);

}  // namespace tt::analyzer
