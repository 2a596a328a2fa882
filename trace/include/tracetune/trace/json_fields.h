// The JSON documents' field tables: each object of a document is one table of fields, its key
// and where its value comes from (a member, a member function, or a function of the struct),
// described once as the store describes its columns (trace/src/store/store.cpp). The tables
// write the documents and list their keys (field_paths), which tests/unit/json_schema_test.cpp
// checks against each document's schema block in the docs: tracetune.analysis and
// tracetune.diff (analyzer/src/report/, docs/analysis.md), `info --json`'s summary
// (trace/src/model/summary.cpp, docs/trace-format.md), tracetune.trials
// (tuner/src/tuned_writer.cpp, docs/tuning.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tracetune/trace/json_writer.h"

namespace tt::trace::json {

// "key": value (Json::value: numbers, strings, bools, std::optional as null, vectors as arrays,
// name/value pairs as objects). A getter that returns std::optional<T> with `omit_empty` leaves
// the key out when empty; `lines` places the members of the value's array or object.
template <class Get>
struct Field {
  std::string_view key;
  Get get;
  bool omit_empty = false;
  Lines lines = Lines::none;
  constexpr Field one_per_line(Lines l = Lines::each) const { return {key, get, omit_empty, l}; }
};

// "key": {fields of get(s)}; a getter returning a pointer leaves the key out for nullptr, or
// writes null there with `null_when_absent`.
template <class Get, class Fields>
struct ObjectField {
  std::string_view key;
  Get get;
  Fields fields;
  bool null_when_absent = false;
};

// "key": [{fields of each element of get(s)}, ...]; `lines` places the elements (each element
// on one line).
template <class Get, class Fields>
struct ArrayField {
  std::string_view key;
  Get get;
  Fields fields;
  Lines lines = Lines::none;
  constexpr ArrayField one_per_line(Lines l = Lines::each) const { return {key, get, fields, l}; }
};

template <class Get>
constexpr Field<Get> field(std::string_view key, Get get) {
  return {key, get};
}
// A field written only where its getter's std::optional holds a value.
template <class Get>
constexpr Field<Get> field_if(std::string_view key, Get get) {
  return {key, get, true};
}
template <class Get, class Fields>
constexpr ObjectField<Get, Fields> object(std::string_view key, Get get, Fields fields) {
  return {key, get, fields};
}
// An object whose getter returns a pointer: null where it is nullptr.
template <class Get, class Fields>
constexpr ObjectField<Get, Fields> object_or_null(std::string_view key, Get get, Fields fields) {
  return {key, get, fields, true};
}
template <class Get, class Fields>
constexpr ArrayField<Get, Fields> array(std::string_view key, Get get, Fields fields) {
  return {key, get, fields};
}

template <class S, class Fields>
void write_fields(Json& j, const S& s, const Fields& fields);

template <class S, class Get>
void write_field(Json& j, const S& s, const Field<Get>& f) {
  decltype(auto) v = std::invoke(f.get, s);
  if constexpr (is_optional<std::decay_t<decltype(v)>>) {
    if (f.omit_empty && !v) return;
  }
  j.kv(f.key, v, f.lines);
}

template <class S, class Get, class Fields>
void write_field(Json& j, const S& s, const ObjectField<Get, Fields>& f) {
  decltype(auto) v = std::invoke(f.get, s);
  if constexpr (std::is_pointer_v<std::decay_t<decltype(v)>>) {
    if (v == nullptr) {
      if (f.null_when_absent) j.key(f.key).null();
      return;
    }
    j.key(f.key).begin_object();
    write_fields(j, *v, f.fields);
  } else {
    j.key(f.key).begin_object();
    write_fields(j, v, f.fields);
  }
  j.end_object();
}

template <class S, class Get, class Fields>
void write_field(Json& j, const S& s, const ArrayField<Get, Fields>& f) {
  j.key(f.key).begin_array(f.lines);
  for (const auto& item : std::invoke(f.get, s)) {
    j.begin_object();
    write_fields(j, item, f.fields);
    j.end_object();
    j.flush();
  }
  j.end_array();
}

// "key": value for each of `fields`, in order.
template <class S, class Fields>
void write_fields(Json& j, const S& s, const Fields& fields) {
  std::apply([&](const auto&... f) { (write_field(j, s, f), ...); }, fields);
}

// The keys a table writes, as dotted paths below `prefix` ("findings.evidence.what"); an array's
// elements add no step to the path.
template <class Fields>
void field_paths(const Fields& fields, const std::string& prefix, std::vector<std::string>& out);

template <class Get>
void field_path(const Field<Get>& f, const std::string& prefix, std::vector<std::string>& out) {
  out.push_back(prefix + std::string(f.key));
}
template <class Get, class Fields>
void field_path(const ObjectField<Get, Fields>& f, const std::string& prefix, std::vector<std::string>& out) {
  out.push_back(prefix + std::string(f.key));
  field_paths(f.fields, prefix + std::string(f.key) + ".", out);
}
template <class Get, class Fields>
void field_path(const ArrayField<Get, Fields>& f, const std::string& prefix, std::vector<std::string>& out) {
  out.push_back(prefix + std::string(f.key));
  field_paths(f.fields, prefix + std::string(f.key) + ".", out);
}

template <class Fields>
void field_paths(const Fields& fields, const std::string& prefix, std::vector<std::string>& out) {
  std::apply([&](const auto&... f) { (field_path(f, prefix, out), ...); }, fields);
}

// A whole document: {fields of s} and a newline; indented, the top level's members one per line.
template <class S, class Fields>
std::string document_json(const S& s, const Fields& fields, Style style = Style::compact) {
  Json j(style);
  j.begin_object(style == Style::indented ? Lines::each : Lines::none);
  write_fields(j, s, fields);
  j.end_object();
  j.out += '\n';
  return j.out;
}

// The same (compact) handed to `sink` in pieces as it is written (Json::flush).
template <class S, class Fields>
void document_json(const S& s, const Fields& fields, std::function<void(std::string_view)> sink) {
  Json j;
  j.sink = std::move(sink);
  j.begin_object();
  write_fields(j, s, fields);
  j.end_object();
  j.out += '\n';
  j.flush(true);
}

// Every key of a document's table, as dotted paths.
template <class Fields>
std::vector<std::string> document_paths(const Fields& fields) {
  std::vector<std::string> paths;
  field_paths(fields, "", paths);
  return paths;
}

}  // namespace tt::trace::json
