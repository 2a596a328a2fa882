// Golden files of the unit tests (tests/golden/expected/): a test's output compared byte for
// byte with its checked-in file; TT_UPDATE_GOLDEN=1 rewrites the file instead (so does the
// update_golden target).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

inline void compare_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(TT_TEST_DATA_DIR) + "/../golden/expected/" + name;
  if (const char* update = std::getenv("TT_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << path << " (TT_UPDATE_GOLDEN=1 rewrites it)";
}
