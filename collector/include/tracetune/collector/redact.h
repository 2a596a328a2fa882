// What the collector never stores: secrets in the environment and on command lines. Shared by
// the injected library (which redacts before anything reaches a record file, so the raw files
// hold no secret either) and the launcher (the trace's `command` meta entry). Header-only,
// no allocation, no exceptions, no library calls: safe in the fork-child path.
//
// Redacted, each replaced by "<redacted>":
//  - by name: an environment variable or a `--NAME=value` / `--NAME value` argument whose NAME
//    contains, case-insensitively, TOKEN KEY SECRET PASS PWD CRED AUTH COOKIE PRIVATE SESSION
//    WEBHOOK SIGNATURE or DSN (PWD and OLDPWD themselves, the working directory, are kept);
//  - by name, anywhere in a value or an argument: `NAME=value` where NAME is such a name made
//    of letters, digits and . _ - + ~ (Hydra overrides `db.password=x`, `+wandb.api_key=x`,
//    URL query parameters `?token=x&...`, libpq `password=x`; the value ends at a space, & ; ,
//    or a quote), and `"NAME": "value"` or `'NAME': 'value'` (JSON or a Python dict in argv);
//  - by value, anywhere: the user:password part of a URL (scheme://user:pw@host keeps
//    scheme:// and @host), and long high-entropy strings (32+ characters of letters, digits
//    and + = _ -, with upper case, lower case and digits, 16+ distinct characters, and the
//    character class (upper, lower, digit; separators skipped) changing at every third
//    character or more often: API keys, base64 secrets; identifiers like
//    run_Name-2024-11-25_experiment_number_7, hex digests and paths' segments are plainer).
// Not redacted: the argument after a short flag (`-p X`): -p is a port, a profile or a
// pipeline far more often than a password, and redacting those would hide what ran.
#pragma once

#include <cstddef>

namespace tt::collector::redact {

inline constexpr char kMarker[] = "<redacted>";
inline constexpr std::size_t kMarkerLen = sizeof kMarker - 1;

inline bool same_nocase(char a, char upper_b) {
  if (a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
  return a == upper_b;
}

inline bool contains_nocase(const char* s, std::size_t n, const char* upper_word) {
  std::size_t w = 0;
  while (upper_word[w] != '\0') ++w;
  for (std::size_t i = 0; i + w <= n; ++i) {
    std::size_t k = 0;
    while (k < w && same_nocase(s[i + k], upper_word[k])) ++k;
    if (k == w) return true;
  }
  return false;
}

inline bool equals(const char* s, std::size_t n, const char* word) {
  std::size_t k = 0;
  while (k < n && word[k] != '\0' && s[k] == word[k]) ++k;
  return k == n && word[k] == '\0';
}

// NAME looks like it holds a secret.
inline bool secret_name(const char* name, std::size_t n) {
  if (equals(name, n, "PWD") || equals(name, n, "OLDPWD")) return false;
  static constexpr const char* kWords[] = {"TOKEN", "KEY",     "SECRET",  "PASS",      "PWD", "CRED",   "AUTH",
                                           "COOKIE", "PRIVATE", "SESSION", "WEBHOOK", "SIGNATURE", "DSN"};
  for (const char* w : kWords)
    if (contains_nocase(name, n, w)) return true;
  return false;
}

inline bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '=' ||
         c == '_' || c == '-';
}

// A run of token characters that looks like a key rather than a word or a digest.
inline bool high_entropy(const char* s, std::size_t n) {
  if (n < 32) return false;
  bool upper = false, lower = false, digit = false;
  bool seen[128] = {};
  int distinct = 0;
  // class changes (upper, lower, digit) between neighbouring letters and digits; separators
  // (+ = _ -) are skipped, so "run_Name-2024-11-25_experiment_7" changes as rarely as it reads
  std::size_t changes = 0;
  int previous = -1;
  auto cls = [](char c) { return c >= 'A' && c <= 'Z' ? 0 : c >= 'a' && c <= 'z' ? 1 : c >= '0' && c <= '9' ? 2 : 3; };
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (const int k = cls(c); k != 3) {
      if (previous >= 0 && k != previous) ++changes;
      previous = k;
    }
    upper |= c >= 'A' && c <= 'Z';
    lower |= c >= 'a' && c <= 'z';
    digit |= c >= '0' && c <= '9';
    const auto u = static_cast<unsigned char>(c) & 127u;
    if (!seen[u]) {
      seen[u] = true;
      ++distinct;
    }
  }
  return upper && lower && digit && distinct >= 16 && changes * 3 >= n;
}

// A character of a `NAME=value` name (Hydra's override grammar, query parameters).
inline bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c == '+' || c == '~';
}

// Where the value of a secret `NAME=value` that starts a name at v[i] ends (n: to the end);
// 0 when v[i..] is not such a pair.
inline std::size_t named_value_end(const char* v, std::size_t n, std::size_t i) {
  if (i > 0 && name_char(v[i - 1])) return 0;  // inside a name, not at its start
  std::size_t eq = i;
  while (eq < n && name_char(v[eq])) ++eq;
  if (eq == i || eq >= n || v[eq] != '=' || !secret_name(v + i, eq - i)) return 0;
  std::size_t end = eq + 1;
  while (end < n && v[end] != ' ' && v[end] != '\t' && v[end] != '&' && v[end] != ';' && v[end] != ',' &&
         v[end] != '"' && v[end] != '\'')
    ++end;
  return end;
}

// For `"NAME": "value"` (or single quotes) at v[i] with a secret NAME: sets [from, to) to the
// value's characters inside its quotes and returns true.
inline bool quoted_secret(const char* v, std::size_t n, std::size_t i, std::size_t& from, std::size_t& to) {
  const char q = v[i];
  std::size_t k = i + 1;
  while (k < n && v[k] != q && v[k] != '\\') ++k;
  if (k >= n || v[k] != q || !secret_name(v + i + 1, k - i - 1)) return false;
  ++k;
  while (k < n && v[k] == ' ') ++k;
  if (k >= n || v[k] != ':') return false;
  ++k;
  while (k < n && v[k] == ' ') ++k;
  if (k >= n || v[k] != q) return false;
  from = ++k;
  while (k < n && v[k] != q) k += v[k] == '\\' ? 2 : 1;  // escaped quotes stay inside
  to = k < n ? k : n;
  return true;
}

// Writes `v` through put(const char*, size_t) with secret NAME=value and "NAME": "value"
// values, URL userinfo and high-entropy runs replaced by the marker. Returns whether anything
// was replaced.
template <class Put>
bool put_value(const char* v, std::size_t n, Put&& put) {
  bool any = false;
  std::size_t i = 0, done = 0;  // v[done, i) is not written yet
  auto replace = [&](std::size_t from, std::size_t to) {
    put(v + done, from - done);
    put(kMarker, kMarkerLen);
    done = to;
    any = true;
  };
  while (i < n) {
    if (n - i >= 3 && v[i] == ':' && v[i + 1] == '/' && v[i + 2] == '/') {
      const std::size_t start = i + 3;
      std::size_t end = start, at = n;
      for (; end < n && v[end] != '/' && v[end] != '?' && v[end] != '#' && v[end] != ' '; ++end)
        if (v[end] == '@') at = end;
      if (at != n) replace(start, at);  // keep "@host"
      i = end;
    } else if (std::size_t from = 0, to = 0; (v[i] == '"' || v[i] == '\'') && quoted_secret(v, n, i, from, to)) {
      if (to > from) replace(from, to);
      i = to;
    } else if (const std::size_t end = named_value_end(v, n, i); end != 0) {
      std::size_t eq = i;
      while (v[eq] != '=') ++eq;
      if (end > eq + 1) replace(eq + 1, end);
      i = end;
    } else if (token_char(v[i])) {
      std::size_t end = i;
      while (end < n && token_char(v[end])) ++end;
      if (high_entropy(v + i, end - i)) replace(i, end);
      i = end;
    } else {
      ++i;
    }
  }
  put(v + done, n - done);
  return any;
}

// A flag that names a secret: "--password", "-token", "--api-key" (without "=value").
inline bool secret_flag(const char* a, std::size_t n) {
  if (n < 2 || a[0] != '-') return false;
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] == '=') return false;
  return secret_name(a, n);
}

// Writes one command-line argument redacted: "--password=x" -> "--password=<redacted>";
// the argument after a secret flag ("--token x") -> "<redacted>"; otherwise put_value.
// Returns whether anything was replaced.
template <class Put>
bool put_arg(const char* a, std::size_t n, bool after_secret_flag, Put&& put) {
  if (after_secret_flag) {
    put(kMarker, kMarkerLen);
    return true;
  }
  if (n >= 2 && a[0] == '-') {
    std::size_t eq = 0;
    while (eq < n && a[eq] != '=') ++eq;
    if (eq < n && secret_name(a, eq)) {
      put(a, eq + 1);
      put(kMarker, kMarkerLen);
      return true;
    }
  }
  return put_value(a, n, put);
}

}  // namespace tt::collector::redact
