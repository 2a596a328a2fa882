// The JSON documents' field tables against their schema blocks in the docs: every key a table
// writes is in the document's block, and every key the block names is written by a table
// (report.cpp's and diff_report.cpp's against docs/analysis.md, summary.cpp's against
// docs/trace-format.md, tuned_writer.cpp's against docs/tuning.md).
#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/diff.h"
#include "tracetune/trace/summary.h"
#include "tracetune/tuner/tuned_writer.h"

namespace {

std::string read_doc(const std::string& name) {
  std::ifstream in(std::string(TT_DOCS_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The ``` block after the heading that starts with `heading`.
std::string schema_block(const std::string& doc, const std::string& heading) {
  const auto at = doc.find("\n" + heading);
  if (at == std::string::npos) return {};
  const auto open = doc.find("```", at);
  const auto close = doc.find("```", open + 3);
  if (open == std::string::npos || close == std::string::npos) return {};
  return doc.substr(open + 3, close - open - 3);
}

// The quoted names of a block that stand as keys: "name" not after a colon ("schema":
// "tracetune.diff" names the key schema, not tracetune.diff).
std::set<std::string> block_keys(const std::string& block) {
  std::set<std::string> keys;
  static const std::regex quoted(R"re((:\s*)?"([^"]+)")re");
  for (auto it = std::sregex_iterator(block.begin(), block.end(), quoted); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].matched) keys.insert((*it)[2].str());
  return keys;
}

// Each key a table writes (the last part of its path) -> its first path.
std::map<std::string, std::string> last_parts(const std::vector<std::string>& paths) {
  std::map<std::string, std::string> keys;
  for (const auto& p : paths) keys.emplace(p.substr(p.rfind('.') == std::string::npos ? 0 : p.rfind('.') + 1), p);
  return keys;
}

void expect_same_keys(const std::map<std::string, std::string>& table, const std::set<std::string>& doc, const char* what) {
  ASSERT_FALSE(doc.empty()) << what << ": no schema block found";
  for (const auto& [k, path] : table) EXPECT_TRUE(doc.count(k)) << what << ": " << path << " is written but not documented";
  for (const auto& k : doc) EXPECT_TRUE(table.count(k)) << what << ": \"" << k << "\" is documented but not written";
}

// The keys of a document's table (`paths`) against the schema block after `heading` in `doc`.
void expect_table_matches_doc(const std::vector<std::string>& paths, const std::string& doc, const std::string& heading,
                              const char* what) {
  expect_same_keys(last_parts(paths), block_keys(schema_block(read_doc(doc), heading)), what);
}

TEST(JsonSchema, AnalysisTablesMatchTheDocs) {
  expect_table_matches_doc(tt::analyzer::analysis_json_fields(), "analysis.md", "## The JSON report", "tracetune.analysis");
}

TEST(JsonSchema, DiffTablesMatchTheDocs) {
  expect_table_matches_doc(tt::analyzer::diff_json_fields(), "analysis.md", "### The JSON diff", "tracetune.diff");
}

TEST(JsonSchema, SummaryTableMatchesTheDocs) {
  expect_table_matches_doc(tt::trace::summary_json_fields(), "trace-format.md", "## 7. `tracetune info --json`",
                           "info --json");
}

TEST(JsonSchema, TrialsTableMatchesTheDocs) {
  expect_table_matches_doc(tt::tuner::trials_json_fields(), "tuning.md", "### The trials file", "tracetune.trials");
}

TEST(JsonSchema, PathsNameNestedKeys) {
  const auto paths = tt::analyzer::diff_json_fields();
  EXPECT_NE(std::find(paths.begin(), paths.end(), "ranks.files.time_ns_per_step.relative"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "findings.base_gain_ns"), paths.end());
  const auto trials = tt::tuner::trials_json_fields();
  EXPECT_NE(std::find(trials.begin(), trials.end(), "confirmation.e2e_steps"), trials.end());
  EXPECT_NE(std::find(trials.begin(), trials.end(), "trials.vs_baseline"), trials.end());
  const auto summary = tt::trace::summary_json_fields();
  EXPECT_NE(std::find(summary.begin(), summary.end(), "devices.compute_capability"), summary.end());
}

}  // namespace
