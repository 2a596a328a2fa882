#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "tracetune/trace/file_io.h"

using namespace tt::trace;
namespace fs = std::filesystem;

namespace {
// "hello\n" gzipped (gzip -n), and the same member twice for a multi-member stream.
const unsigned char kHelloGz[] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd,
                                  0xc9, 0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00, 0x00, 0x00};
std::string hello_gz() { return std::string(reinterpret_cast<const char*>(kHelloGz), sizeof kHelloGz); }
}  // namespace

TEST(Gunzip, DecodesOneAndManyMembers) {
  auto one = gunzip(hello_gz());
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(one.value(), "hello\n");
  auto two = gunzip(hello_gz() + hello_gz());
  ASSERT_TRUE(two.ok()) << two.error();
  EXPECT_EQ(two.value(), "hello\nhello\n");
}

TEST(Gunzip, TruncatedAndGarbageAreErrors) {
  const std::string gz = hello_gz();
  for (std::size_t cut : {gz.size() - 1, gz.size() - 5, std::size_t{12}, std::size_t{3}}) {
    auto r = gunzip(gz.substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(gunzip(gz + "trailing junk").ok());
  EXPECT_FALSE(gunzip("plain text").ok());
}

TEST(ReadMaybeGzip, NamesTheFileInErrors) {
  const fs::path p = fs::temp_directory_path() / "tt_truncated_test.json.gz";
  {
    std::ofstream out(p, std::ios::binary);
    const std::string gz = hello_gz();
    out.write(gz.data(), static_cast<std::streamsize>(gz.size() - 6));
  }
  auto r = read_maybe_gzip(p);
  fs::remove(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("tt_truncated_test.json.gz"), std::string::npos);
  EXPECT_NE(r.error().find("truncated"), std::string::npos);
  auto missing = read_maybe_gzip("/nonexistent/x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/x.json"), std::string::npos);
}

TEST(WriteFileAtomic, WholeFilePrivateAndNothingLeftOnError) {
  tt::testing::TempDir dir;
  const fs::path out = dir.path() / "report.txt";
  ASSERT_TRUE(write_file_atomic(out, "first\n").ok());
  ASSERT_TRUE(write_file_atomic(out, "second\n").ok());  // replaces
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second\n");
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  const auto missing = write_file_atomic(dir.path() / "no-such-dir" / "x.txt", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("no-such-dir"), std::string::npos);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // no temporary
}

namespace {
std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

// Issue 32 (1): an output never replaces a FIFO, a device (our own node, never /dev/null) or a
// symlink to one with a regular file.
TEST(AtomicOutput, RefusesToReplaceAFifoADeviceOrALinkToOne) {
  tt::testing::TempDir dir;
  const fs::path fifo = dir.path() / "fifo", dev = dir.path() / "null-clone", link = dir.path() / "link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::pair<fs::path, mode_t>> targets = {{fifo, S_IFIFO}};
  if (::geteuid() == 0 && ::mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {  // /dev/null's numbers
    fs::create_symlink(dev.filename(), link);
    targets.push_back({dev, S_IFCHR});
    targets.push_back({link, S_IFCHR});
  }
  for (const auto& [target, kind] : targets) {
    const auto st = write_file_atomic(target, "x");
    ASSERT_FALSE(st.ok()) << target;
    EXPECT_NE(st.error().find("not a regular file"), std::string::npos) << st.error();
    EXPECT_NE(st.error().find(target.string()), std::string::npos) << st.error();
    struct stat after{};
    ASSERT_EQ(::stat(target.c_str(), &after), 0);
    EXPECT_EQ(after.st_mode & S_IFMT, kind) << target << " was replaced";
  }
  const auto directory = AtomicOutput::create(dir.path());
  EXPECT_FALSE(directory.ok());
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "temporary left: " << e.path();
}

// Issue 32 (5): the temporary is written through the descriptor made with O_EXCL, never
// reopened by name; a name swapped for a symlink to another file is detected at commit, and that
// file is neither written nor chmod'ed nor renamed into place.
TEST(AtomicOutput, ASwappedTemporaryIsNeverWrittenThroughOrCommitted) {
  tt::testing::TempDir dir;
  const fs::path victim = dir.path() / "victim.txt", out_path = dir.path() / "out.txt";
  { std::ofstream(victim) << "precious\n"; }
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  auto out = AtomicOutput::create(out_path);
  ASSERT_TRUE(out.ok()) << out.error();
  const fs::path moved = dir.path() / "ours-moved-away";
  fs::rename(out->temp_path(), moved);
  fs::create_symlink(victim, out->temp_path());
  EXPECT_TRUE(out->write("evil\n").ok());  // goes to our own file, wherever its name went
  const auto st = out->commit();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("was replaced"), std::string::npos) << st.error();
  EXPECT_EQ(read_text(victim), "precious\n");
  EXPECT_EQ(fs::status(victim).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  EXPECT_FALSE(fs::exists(fs::symlink_status(out_path)));
  EXPECT_EQ(read_text(moved), "evil\n");
}

TEST(SelfExeDir, IsTheTestBinarysDirectory) {
  const fs::path d = self_exe_dir();
  ASSERT_FALSE(d.empty());
  EXPECT_TRUE(fs::exists(d / "unit_tests"));
}
