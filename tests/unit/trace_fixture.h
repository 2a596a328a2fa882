// The trace the store tests write and read: every category of tests/data/kineto/all_categories.json.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "tracetune/trace/importers.h"

namespace tt::testing {

inline trace::Trace all_categories_trace() {
  trace::Trace t;
  const std::filesystem::path p[] = {std::filesystem::path(TT_TEST_DATA_DIR) / "kineto/all_categories.json"};
  EXPECT_TRUE(trace::import_any(p, t).ok());
  t.finalize();
  return t;
}

}  // namespace tt::testing
