// `tracetune bench kernels`: see kernel_bench.h.
#include "tracetune/tuner/kernel_bench.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "tracetune/collector/launcher.h"
#include "tracetune/tuner/apply.h"

extern char** environ;

namespace tt::tuner {
namespace fs = std::filesystem;

extern const char kBuiltinKnobsToml[];

namespace {
int fail(const std::string& msg) {
  std::fprintf(stderr, "tracetune: bench kernels: %s\n", msg.c_str());
  return 2;
}
}  // namespace

int run_kernel_bench(const KernelBenchOptions& opt) {
  const fs::path python_dir = collector::python_integration_dir();
  if (python_dir.empty()) return fail("the Python integration (tracetune package) was not found next to tracetune");
  auto dir = make_private_tempdir("tracetune-bench-kernels");
  if (!dir) return fail(dir.error());
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir.value()};
  const fs::path knobs = dir.value() / "knobs.toml", subs = dir.value() / "substitutions.toml";
  for (auto [path, text] : {std::pair{knobs, kBuiltinKnobsToml}, std::pair{subs, kBuiltinSubstitutionsToml}})
    if (auto st = write_private(path, text); !st) return fail(st.error());

  std::vector<std::string> env;
  std::string pythonpath = python_dir.string();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      if (kv.size() > 11) pythonpath += ":" + kv.substr(11);
    } else if (kv.rfind("TRACETUNE_KERNELS_LIB=", 0) != 0 && kv.rfind("TRACETUNE_KERNELS_CUDA_LIB=", 0) != 0) {
      env.push_back(kv);
    }
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  for (bool cuda : {false, true})
    if (auto lib = kernels_library_path(cuda); !lib.empty())
      env.push_back(std::string(cuda ? "TRACETUNE_KERNELS_CUDA_LIB=" : "TRACETUNE_KERNELS_LIB=") + lib.string());

  std::vector<std::string> cmd = {opt.python, "-m", "tracetune._kernel_bench", "--catalogue", subs.string(),
                                  "--knobs", knobs.string()};
  cmd.insert(cmd.end(), opt.args.begin(), opt.args.end());
  auto status = collector::run_job(cmd, env);
  if (!status) return fail(opt.python + ": " + status.error());
  const int st = status.value();
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

}  // namespace tt::tuner
