// The knob catalogue's internal part (knobs.cpp; toml++ in its signatures, so not in the public
// tracetune/tuner/knobs.h): turning a toml++ node into a knob Value, shared by the catalogue
// loader and the tuned-config parser, so both accept exactly the same spellings.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "tracetune/tuner/knobs.h"

namespace tt::tuner::detail {

// "line N" of a node, for messages.
inline std::string where(const toml::node& n) {
  const auto& b = n.source().begin;
  return b.line > 0 ? "line " + std::to_string(b.line) : std::string("?");
}

// How TOML spells a node, shortened, for messages: "fp16", 4, [1, 2].
std::string display_node(const toml::node& n);

// The node as a value of `knob`'s type (int accepted for float, a single string for a
// list), checked against its range and choices. Errors are "expected ..." phrases.
Result<Value> value_from_toml(const Knob& knob, const toml::node& node);

}  // namespace tt::tuner::detail
