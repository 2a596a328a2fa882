// The job's Python environment, as far as `tracetune record` (and `tune --kernels`) needs it
// before starting the job: which interpreter the command runs, and the CUDA libraries its pip
// wheels carry.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tt::collector {

// The program `name` would run as, found the way posix_spawnp searches PATH; empty if none.
std::filesystem::path resolve_program(const std::string& name);

// The Python interpreter that runs the job `command`, so that every Python piece started for
// the job has its PyTorch and packages: the command's program when it is a Python (a virtual
// environment's bin/python kept as named, not resolved through its link), else the interpreter
// of its #! line (torchrun, accelerate, a console script), else a python* word later in the
// command (`env X=1 python ...`), else `python3` on PATH; empty if none.
std::filesystem::path job_python(const std::vector<std::string>& command);

// libcupti.so.13 from the pip wheels of the job's Python, or empty. CUDA 13 wheels put it in
// site-packages/nvidia/cu13/lib (nvidia-cuda-cupti 13.x), older layouts in
// site-packages/nvidia/<package>/lib. No loader search path names these folders: PyTorch finds
// its copy through libtorch's RUNPATH, so a CUDA job that is not PyTorch (a C++ program, NCCL's
// tests) in the same environment, and our injection library, would not. The job's Python is
// the interpreter the command runs (`python ...`, a script whose #! line names one, as
// torchrun's does, or a python* word later in the command, as in `env X=1 python ...`), then
// `python3` on PATH (the active environment, for a job that is not Python).
std::filesystem::path find_wheel_cupti(const std::vector<std::string>& command);

}  // namespace tt::collector
