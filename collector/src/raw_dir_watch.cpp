#include "raw_dir_watch.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tt::collector {
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kRootEvents = IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DELETE_SELF;
constexpr std::uint32_t kHostEvents = IN_CREATE | IN_MOVED_TO | IN_ONLYDIR;

bool is_record_file(const fs::path& name) { return name.extension() == ".ttr"; }

// More descriptors for us once the job runs (raising the limit before would change the job's).
bool raise_fd_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return false;
  rl.rlim_cur = rl.rlim_max;
  return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

// Writes the whole of `from` into a new private file `to`; false (and nothing left) on error.
bool copy_out(int from, const fs::path& to, std::uint64_t& bytes) {
  struct stat st {};
  if (::fstat(from, &st) != 0) return false;
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) return false;
  off_t offset = 0;
  bool ok = true;
  while (ok && offset < st.st_size) {
    const ssize_t n = ::sendfile(out, from, &offset, static_cast<std::size_t>(st.st_size - offset));
    ok = n > 0 || (n < 0 && errno == EINTR);
  }
  ok = ::close(out) == 0 && ok;
  if (!ok) ::unlink(to.c_str());
  else bytes += static_cast<std::uint64_t>(st.st_size);
  return ok;
}

}  // namespace

RawDirWatch::RawDirWatch(fs::path raw_dir) : raw_dir_(std::move(raw_dir)) {
  inotify_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_ < 0) return;
  const int wd = ::inotify_add_watch(inotify_, raw_dir_.c_str(), kRootEvents);
  if (wd < 0) {
    ::close(inotify_);
    inotify_ = -1;
    return;
  }
  watches_.emplace_back(wd, fs::path());
  scan();
}

RawDirWatch::~RawDirWatch() {
  for (const auto& f : files_) ::close(f.fd);
  if (inotify_ >= 0) ::close(inotify_);
}

void RawDirWatch::watch_host_dir(const fs::path& name) {
  const int wd = ::inotify_add_watch(inotify_, (raw_dir_ / name).c_str(), kHostEvents);
  if (wd < 0) return;
  if (std::none_of(watches_.begin(), watches_.end(), [&](const auto& w) { return w.first == wd; }))
    watches_.emplace_back(wd, name);
  std::error_code ec;  // files created before the watch existed
  for (fs::directory_iterator it(raw_dir_ / name, ec), end; !ec && it != end; it.increment(ec))
    if (is_record_file(it->path().filename())) hold_file(name / it->path().filename());
}

void RawDirWatch::hold_file(const fs::path& rel) {
  if (std::any_of(files_.begin(), files_.end(), [&](const Held& h) { return h.path == rel; })) return;
  const fs::path path = raw_dir_ / rel;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == EMFILE && raise_fd_limit()) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  files_.push_back({rel, fd});
}

void RawDirWatch::release(const fs::path& rel) {
  std::erase_if(files_, [&](const Held& h) {
    if (h.path != rel) return false;
    ::close(h.fd);
    return true;
  });
}

void RawDirWatch::scan() {
  std::error_code ec;
  for (fs::directory_iterator it(raw_dir_, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) watch_host_dir(it->path().filename());
}

void RawDirWatch::poll() {
  if (inotify_ < 0) return;
  alignas(inotify_event) char buf[8192];
  while (true) {
    const ssize_t n = ::read(inotify_, buf, sizeof buf);
    if (n <= 0) return;  // EAGAIN: nothing more
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if ((ev->mask & IN_Q_OVERFLOW) != 0) {
        scan();
        continue;
      }
      const auto w = std::find_if(watches_.begin(), watches_.end(), [&](const auto& x) { return x.first == ev->wd; });
      if (w == watches_.end()) continue;
      const bool root = w->second.empty();
      if (root && (ev->mask & IN_DELETE_SELF) != 0) raw_dir_deleted_ = true;
      if (ev->len == 0) continue;
      const fs::path name(ev->name);
      if (root && (ev->mask & IN_ISDIR) != 0) watch_host_dir(name);
      else if (!root && is_record_file(name)) hold_file(w->second / name);
    }
  }
}

std::string RawDirWatch::restore() {
  poll();
  std::size_t unlinked = 0, restored = 0;
  std::uint64_t bytes = 0;
  for (const auto& f : files_) {
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || st.st_nlink > 0) continue;
    ++unlinked;
    std::error_code ec;
    fs::create_directories(raw_dir_.parent_path(), ec);  // the job may have deleted the -o directory too
    if (::mkdir(raw_dir_.c_str(), 0700) != 0 && errno != EEXIST) continue;
    if (::mkdir((raw_dir_ / f.path.parent_path()).c_str(), 0700) != 0 && errno != EEXIST) continue;
    if (copy_out(f.fd, raw_dir_ / f.path, bytes)) ++restored;
  }
  if (unlinked == 0 && !raw_dir_deleted_) return {};
  std::string why = raw_dir_deleted_ ? fmt::format("the job deleted the raw record directory {}", raw_dir_.string())
                                     : fmt::format("the job deleted {} record file(s) in {}", unlinked, raw_dir_.string());
  return fmt::format("{}; {} of {} deleted file(s) restored from tracetune's open handles ({} bytes); events the job "
                     "recorded into files created after the deletion are lost",
                     why, restored, unlinked, bytes);
}

}  // namespace tt::collector
