// The JSON documents' field tables (tracetune.analysis in report.cpp, tracetune.diff in
// diff_report.cpp): each object of a document is one table of fields, its key and where its
// value comes from (a member, a member function, or a function of the struct), described once as
// the store describes its columns (trace/src/store/store.cpp). The tables write the documents
// and list their keys (field_paths), which tests/unit/json_schema_test.cpp checks against the
// schema in docs/analysis.md.
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

#include "json_writer.h"

namespace tt::analyzer {

// "key": value (Json::value: numbers, strings, bools, std::optional as null, vectors as arrays).
// A getter that returns std::optional<T> with `omit_empty` leaves the key out when empty.
template <class Get>
struct Field {
  std::string_view key;
  Get get;
  bool omit_empty = false;
};

// "key": {fields of get(s)}; a getter returning a pointer leaves the key out for nullptr.
template <class Get, class Fields>
struct ObjectField {
  std::string_view key;
  Get get;
  Fields fields;
};

// "key": [{fields of each element of get(s)}, ...]
template <class Get, class Fields>
struct ArrayField {
  std::string_view key;
  Get get;
  Fields fields;
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
template <class Get, class Fields>
constexpr ArrayField<Get, Fields> array(std::string_view key, Get get, Fields fields) {
  return {key, get, fields};
}

// A struct's `rank`, null where it is -1 (a cross-rank finding).
template <class S>
std::optional<std::int32_t> rank_or_null(const S& s) {
  return s.rank >= 0 ? std::optional<std::int32_t>(s.rank) : std::nullopt;
}

template <class S, class Fields>
void write_fields(Json& j, const S& s, const Fields& fields);

template <class S, class Get>
void write_field(Json& j, const S& s, const Field<Get>& f) {
  decltype(auto) v = std::invoke(f.get, s);
  if constexpr (is_optional<std::decay_t<decltype(v)>>) {
    if (f.omit_empty && !v) return;
  }
  j.kv(f.key, v);
}

template <class S, class Get, class Fields>
void write_field(Json& j, const S& s, const ObjectField<Get, Fields>& f) {
  decltype(auto) v = std::invoke(f.get, s);
  if constexpr (std::is_pointer_v<std::decay_t<decltype(v)>>) {
    if (v == nullptr) return;
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
  j.key(f.key).begin_array();
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

// "key": {fields of s}
template <class S, class Fields>
void write_object(Json& j, std::string_view key, const S& s, const Fields& fields) {
  j.key(key).begin_object();
  write_fields(j, s, fields);
  j.end_object();
}

// "key": [{fields of each item}, ...]
template <class S, class Fields>
void write_objects(Json& j, std::string_view key, const std::vector<S>& items, const Fields& fields) {
  j.key(key).begin_array();
  for (const auto& s : items) {
    j.begin_object();
    write_fields(j, s, fields);
    j.end_object();
  }
  j.end_array();
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

// A whole document: {fields of s} and a newline.
template <class S, class Fields>
std::string document_json(const S& s, const Fields& fields) {
  Json j;
  j.begin_object();
  write_fields(j, s, fields);
  j.end_object();
  j.out += '\n';
  return j.out;
}

// The same handed to `sink` in pieces as it is written (Json::flush).
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

}  // namespace tt::analyzer
