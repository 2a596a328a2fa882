// `tracetune bench kernels`: see kernel_bench.h.
#include "tracetune/tuner/kernel_bench.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "tracetune/collector/launcher.h"
#include "tracetune/trace/file_io.h"
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

int run_kernel_bench(const KernelBenchOptions& opt, const fs::path& kept) {
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
  if (!kept.empty()) cmd.insert(cmd.end(), {"--kept", kept.string()});
  auto status = collector::run_job(cmd, env);
  if (!status) return fail(opt.python + ": " + status.error());
  const int st = status.value();
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

Result<std::vector<std::pair<std::string, Value>>> read_kept_kernels(const fs::path& kept, const Catalogue& catalogue) {
  auto text = trace::read_maybe_gzip(kept);
  if (!text) return make_error(text.error());
  std::vector<std::pair<std::string, Value>> out;
  std::string_view rest(text->data(), text->size());
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    const Knob* k = eq == std::string_view::npos ? nullptr : catalogue.find(std::string(line.substr(0, eq)));
    const std::string value(eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1));
    const auto known = [&](const Value& v) { return display(v) == value; };
    const auto it = k != nullptr ? std::find_if(k->values.begin(), k->values.end(), known) : std::vector<Value>::const_iterator{};
    if (k == nullptr || it == k->values.end())
      return make_error(fmt::format("{}: \"{}\" is not a knob value of the catalogue", kept.string(), line));
    out.emplace_back(k->id, *it);
  }
  return out;
}

}  // namespace tt::tuner
