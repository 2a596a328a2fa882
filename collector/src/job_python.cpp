// See job_python.h. Only stat and directory listings: nothing of the job runs before the job.
#include "tracetune/collector/job_python.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string_view>

namespace tt::collector {
namespace fs = std::filesystem;

fs::path resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const fs::path candidate = fs::path(dir.empty() ? "." : std::string(dir)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

namespace {

bool is_python(const fs::path& p) {
  return p.filename().string().starts_with("python");
}

// The interpreter a script's first line names: "#!/venv/bin/python3" or "#!/usr/bin/env python3".
fs::path shebang_python(const fs::path& script) {
  char head[256] = {};
  const int fd = ::open(script.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, head, sizeof head - 1);
  ::close(fd);
  if (n < 2 || head[0] != '#' || head[1] != '!') return {};
  const std::string_view text(head + 2, static_cast<std::size_t>(n) - 2);
  std::istringstream line{std::string(text.substr(0, text.find('\n')))};
  std::string interpreter, argument;
  line >> interpreter >> argument;
  if (fs::path(interpreter).filename() == "env")
    return is_python(argument) ? resolve_program(argument) : fs::path();
  return is_python(interpreter) ? fs::path(interpreter) : fs::path();
}

// The interpreters to ask, most specific first.
std::vector<fs::path> job_pythons(const std::vector<std::string>& command) {
  std::vector<fs::path> out;
  if (!command.empty()) {
    const fs::path program = resolve_program(command[0]);
    if (is_python(command[0]))
      out.push_back(program);
    else if (!program.empty())
      out.push_back(shebang_python(program));
  }
  for (std::size_t i = 1; i < command.size(); ++i)
    if (command[i].find('=') == std::string::npos && is_python(command[i]))
      out.push_back(resolve_program(command[i]));
  out.push_back(resolve_program("python3"));
  std::erase_if(out, [](const fs::path& p) { return p.empty(); });
  return out;
}

// site-packages / dist-packages folders of the interpreter at `python`: first of its own prefix
// taken without resolving links (a venv's bin/python links to the base interpreter, and the
// venv's packages are beside the link), then the base's, /usr/local for /usr (where pip puts
// packages on Debian), and the user's ~/.local.
std::vector<fs::path> site_dirs(const fs::path& python) {
  std::vector<fs::path> prefixes = {python.parent_path().parent_path()};
  std::error_code ec;
  if (const fs::path real = fs::canonical(python, ec); !ec)
    prefixes.push_back(real.parent_path().parent_path());
  if (prefixes.back() == "/usr") prefixes.emplace_back("/usr/local");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
    prefixes.push_back(fs::path(home) / ".local");
  std::vector<fs::path> out;
  for (const fs::path& prefix : prefixes)
    for (const char* lib : {"lib", "lib64"})
      for (const auto& entry : fs::directory_iterator(prefix / lib, ec))
        if (entry.path().filename().string().starts_with("python3"))
          for (const char* kind : {"site-packages", "dist-packages"})
            if (fs::is_directory(entry.path() / kind, ec)) out.push_back(entry.path() / kind);
  return out;
}

// The CUDA 13 layout (one nvidia/cu13 tree), then the per-library wheel, then any nvidia/*/lib.
fs::path cupti_in(const fs::path& site) {
  std::error_code ec;
  for (const char* sub : {"nvidia/cu13/lib", "nvidia/cuda_cupti/lib"})
    if (fs::exists(site / sub / "libcupti.so.13", ec)) return site / sub / "libcupti.so.13";
  for (const auto& entry : fs::directory_iterator(site / "nvidia", ec))
    if (fs::exists(entry.path() / "lib" / "libcupti.so.13", ec))
      return entry.path() / "lib" / "libcupti.so.13";
  return {};
}

}  // namespace

fs::path job_python(const std::vector<std::string>& command) {
  const auto pythons = job_pythons(command);
  return pythons.empty() ? fs::path() : pythons.front();
}

fs::path find_wheel_cupti(const std::vector<std::string>& command) {
  for (const fs::path& python : job_pythons(command))
    for (const fs::path& site : site_dirs(python))
      if (fs::path lib = cupti_in(site); !lib.empty()) return fs::absolute(lib);
  return {};
}

}  // namespace tt::collector
