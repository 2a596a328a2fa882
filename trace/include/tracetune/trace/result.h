// Errors that cross module boundaries are values: a Result<T> holds a T or a message a user
// can act on ("FILE: what is wrong"). C++20 has no std::expected; this is the small subset we use.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tt {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e.message)), failed_(true) {}  // NOLINT
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return err_; }

 private:
  std::string err_;
  bool failed_ = false;
};

using Status = Result<void>;

inline Error make_error(std::string msg) { return Error{std::move(msg)}; }

}  // namespace tt
