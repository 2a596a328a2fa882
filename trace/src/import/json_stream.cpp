// The streaming splitter (json_stream.h).
#include "json_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace tt::trace {
namespace fs = std::filesystem;

namespace {

// The file's bytes, gunzipped when it starts with the gzip magic, a chunk at a time.
class ChunkReader {
 public:
  ~ChunkReader() {
    if (gz_) inflateEnd(&z_);
    if (fd_ >= 0) ::close(fd_);
  }

  Status open(const fs::path& path) {
    path_ = path.string();
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) return make_error(path_ + ": cannot open");
    total_ = static_cast<std::uint64_t>(st.st_size);
    in_.resize(kChunk);
    if (!fill_raw()) return make_error(path_ + ": cannot read");
    gz_ = in_end_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f && static_cast<unsigned char>(in_[1]) == 0x8b;
    if (gz_ && inflateInit2(&z_, 15 + 32) != Z_OK) return make_error(path_ + ": cannot start gunzip");
    return {};
  }

  // The next bytes (empty at the end); an error on a read or gzip failure.
  Result<std::string_view> next() {
    if (!gz_) {
      if (in_pos_ == in_end_ && !fill_raw()) return make_error(path_ + ": cannot read");
      std::string_view out(in_.data() + in_pos_, in_end_ - in_pos_);
      in_pos_ = in_end_;
      return out;
    }
    out_.resize(kChunk);
    while (true) {
      if (in_pos_ == in_end_) {
        if (!fill_raw()) return make_error(path_ + ": cannot read");
        if (in_end_ == 0) {
          if (!member_ended_) return make_error(path_ + ": the gzip stream ends early (truncated file?)");
          return std::string_view();
        }
      }
      if (member_ended_) {  // another gzip member follows (trailing zeros end the file)
        if (in_[in_pos_] == '\0') { in_pos_ = in_end_; continue; }
        inflateReset(&z_);
        member_ended_ = false;
      }
      z_.next_in = reinterpret_cast<Bytef*>(in_.data() + in_pos_);
      z_.avail_in = static_cast<uInt>(in_end_ - in_pos_);
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      in_pos_ = in_end_ - z_.avail_in;
      if (rc == Z_STREAM_END) member_ended_ = true;
      else if (rc != Z_OK && rc != Z_BUF_ERROR) return make_error(fmt::format("{}: not a valid gzip stream ({})", path_, z_.msg ? z_.msg : "corrupt"));
      const std::size_t produced = out_.size() - z_.avail_out;
      if (produced) return std::string_view(out_.data(), produced);
    }
  }

  std::uint64_t read() const { return read_; }
  std::uint64_t total() const { return total_; }

 private:
  static constexpr std::size_t kChunk = 4u << 20;
  std::string path_;
  int fd_ = -1;
  bool gz_ = false, member_ended_ = false;
  z_stream z_{};
  std::vector<char> in_, out_;
  std::size_t in_pos_ = 0, in_end_ = 0;
  std::uint64_t read_ = 0, total_ = 0;

  bool fill_raw() {
    ssize_t n;
    do n = ::read(fd_, in_.data(), in_.size());
    while (n < 0 && errno == EINTR);
    if (n < 0) return false;
    in_pos_ = 0;
    in_end_ = static_cast<std::size_t>(n);
    read_ += static_cast<std::uint64_t>(n);
    return true;
  }
};

// Bytes one at a time over the chunks, with bulk copying of a value's bytes.
class Splitter {
 public:
  Splitter(ChunkReader& in, const JsonStreamSink& sink, std::string source) : in_(in), sink_(sink), source_(std::move(source)) {}

  Status run(bool& saw_events) {
    if (auto st = skip_space(); !st) return st;
    if (at_end_) return bad("the file is empty");
    if (peek() == '\xEF') {  // a UTF-8 byte order mark
      for (char want : {'\xEF', '\xBB', '\xBF'})
        if (at_end_ || peek() != want) return bad("not a Chrome trace (top level must be an object or an array)");
        else if (auto st = advance(); !st) return st;
      if (auto st = skip_space(); !st) return st;
    }
    Status st;
    if (!at_end_ && peek() == '[') st = events(saw_events);
    else if (!at_end_ && peek() == '{') st = object(saw_events);
    else return bad("not a Chrome trace (top level must be an object or an array)");
    if (!st) return st;
    if (auto s = skip_space(); !s) return s;
    if (!at_end_) return bad("trailing content after the top-level value");
    return {};
  }

 private:
  ChunkReader& in_;
  const JsonStreamSink& sink_;
  std::string source_;
  std::string_view buf_;
  std::size_t pos_ = 0;
  bool at_end_ = false, started_ = false;

  Error bad(std::string_view what) const { return make_error(fmt::format("{}: {}", source_, what)); }
  char peek() const { return buf_[pos_]; }

  Status refill() {
    while (pos_ == buf_.size() && !at_end_) {
      auto chunk = in_.next();
      if (!chunk) return make_error(chunk.error());
      if (sink_.progress) sink_.progress(in_.read(), in_.total());
      buf_ = chunk.value();
      pos_ = 0;
      if (buf_.empty()) at_end_ = true;
    }
    return {};
  }
  Status advance() {
    ++pos_;
    return refill();
  }
  Status skip_space() {
    if (!started_) {
      started_ = true;
      if (auto st = refill(); !st) return st;
    }
    while (!at_end_ && (peek() == ' ' || peek() == '\n' || peek() == '\r' || peek() == '\t'))
      if (auto st = advance(); !st) return st;
    return {};
  }

  // One JSON value's bytes appended to `out`: strings, nesting and escapes followed; a value
  // ends at its closing bracket, or (a scalar) before the next , ] } or space.
  Status scan_value(std::string& out) {
    const std::size_t start_size = out.size();
    int depth = 0;
    bool in_string = false, escape = false;
    while (!at_end_) {
      std::size_t i = pos_;
      bool done = false;
      for (; i < buf_.size(); ++i) {
        const char c = buf_[i];
        if (in_string) {
          if (escape) escape = false;
          else if (c == '\\') escape = true;
          else if (c == '"') { in_string = false; if (depth == 0) { ++i; done = true; break; } }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (depth == 0) { done = true; break; }  // a scalar's end: not ours
          if (--depth == 0) { ++i; done = true; break; }
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
          done = true;
          break;
        }
      }
      out.append(buf_.data() + pos_, i - pos_);
      if (out.size() - start_size > kMaxStreamedValue)
        return bad(fmt::format("a value larger than {} MiB: not a trace this tool streams", kMaxStreamedValue >> 20));
      pos_ = i;
      if (auto st = refill(); !st) return st;
      if (done) return {};
    }
    return bad("the file ends inside a value (truncated?)");
  }

  // A key's raw text between its quotes (escapes kept).
  Status scan_key(std::string& key) {
    key.clear();
    if (auto st = scan_value(key); !st) return st;
    if (key.size() < 2 || key.front() != '"' || key.back() != '"') return bad("an object key must be a string");
    return {};
  }

  Status expect(char c, std::string_view what) {
    if (auto st = skip_space(); !st) return st;
    if (at_end_ || peek() != c) return bad(fmt::format("expected {} (truncated or not JSON?)", what));
    return advance();
  }

  Status events(bool& saw_events) {
    saw_events = true;
    if (auto st = expect('[', "'['"); !st) return st;
    std::string batch = "[";
    std::uint64_t index = 0;
    auto flush = [&]() -> Status {
      if (batch.size() == 1) return {};
      batch += ']';
      auto st = sink_.events(batch);
      batch = "[";
      return st;
    };
    if (auto st = skip_space(); !st) return st;
    if (!at_end_ && peek() == ']') return advance();
    while (true) {
      if (auto st = skip_space(); !st) return st;
      if (batch.size() > 1) batch += ',';
      if (auto st = scan_value(batch); !st) return st;
      ++index;
      if (batch.size() >= kBatchBytes)
        if (auto st = flush(); !st) return st;
      if (auto st = skip_space(); !st) return st;
      if (at_end_) return bad("the file ends inside 'traceEvents' (truncated?)");
      if (peek() == ']') break;
      if (peek() != ',') return bad(fmt::format("expected ',' or ']' after event {} of 'traceEvents'", index - 1));
      if (auto st = advance(); !st) return st;
    }
    if (auto st = flush(); !st) return st;
    return advance();
  }

  Status object(bool& saw_events) {
    if (auto st = expect('{', "'{'"); !st) return st;
    if (auto st = skip_space(); !st) return st;
    if (!at_end_ && peek() == '}') return advance();
    std::string key, value;
    while (true) {
      if (auto st = skip_space(); !st) return st;
      if (auto st = scan_key(key); !st) return st;
      if (auto st = expect(':', "':' after a key"); !st) return st;
      if (auto st = skip_space(); !st) return st;
      if (key == "\"traceEvents\"" && !at_end_ && peek() == '[') {
        if (auto st = events(saw_events); !st) return st;
      } else {
        value = "{" + key + ":";
        if (auto st = scan_value(value); !st) return st;
        value += '}';
        if (auto st = sink_.field(value); !st) return st;
      }
      if (auto st = skip_space(); !st) return st;
      if (at_end_) return bad("the file ends inside the top-level object (truncated?)");
      if (peek() == '}') return advance();
      if (peek() != ',') return bad("expected ',' or '}' between top-level fields");
      if (auto st = advance(); !st) return st;
    }
  }
};

}  // namespace

Status stream_trace_json(const fs::path& path, const JsonStreamSink& sink, bool& saw_events) {
  ChunkReader in;
  if (auto st = in.open(path); !st) return st;
  saw_events = false;
  Splitter split(in, sink, path.string());
  return split.run(saw_events);
}

}  // namespace tt::trace
