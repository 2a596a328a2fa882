// Keeps the job's record files reachable even if the job deletes them. A job may `rm -rf` its
// output directory (or OUT.db.raw) and keep running: its collector goes on writing into files
// that no longer have a name, and when it exits their data would be gone. While the job runs,
// `record` watches the raw directory (inotify: each host directory, then each *.ttr created in
// it) and holds every record file open; an open file's data stays on disk after its last name
// is gone. When the job has ended, files the job unlinked are written back under their names
// (the raw directory re-created if need be), so the merge sees everything that was kept, and
// `record` warns. `record` wakes as soon as a record file appears (the inotify fd ends its
// wait); a file created and deleted before `record` gets the CPU can still be lost, and the
// warning then says so in the merge's own terms (records it could not read).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tt::collector {

class RawDirWatch {
 public:
  explicit RawDirWatch(std::filesystem::path raw_dir);
  ~RawDirWatch();
  RawDirWatch(const RawDirWatch&) = delete;
  RawDirWatch& operator=(const RawDirWatch&) = delete;

  // An fd to wait on (readable when something was created), or -1 when inotify is unavailable.
  int fd() const { return inotify_; }
  // Opens what appeared since the last call. Cheap when nothing did.
  void poll();
  // After the job: files it unlinked are written back under their names. Returns the warning
  // to print (empty when the job deleted nothing of ours).
  std::string restore();

  std::size_t held() const { return files_.size(); }
  // Stops holding `rel` (host/proc-*.ttr): the flight recorder removes the files of processes
  // that ended before its span, which must then not be restored.
  void release(const std::filesystem::path& rel);

 private:
  struct Held {
    std::filesystem::path path;  // relative to the raw directory: host/proc-*.ttr
    int fd;
  };
  void watch_host_dir(const std::filesystem::path& name);
  void hold_file(const std::filesystem::path& rel);
  void scan();

  std::filesystem::path raw_dir_;
  int inotify_ = -1;
  std::vector<std::pair<int, std::filesystem::path>> watches_;  // watch descriptor -> host dir name
  std::vector<Held> files_;
  bool raw_dir_deleted_ = false;
};

}  // namespace tt::collector
