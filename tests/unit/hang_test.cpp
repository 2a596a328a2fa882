// Hang diagnosis across ranks (analyzer/src/metrics/hang.cpp) on hand-built traces: host
// collectives (gloo, with --ring's enter marks) and NCCL operations recorded by the profiler
// plugin (host-side row = enqueued, device-side row = its kernel's channels all stopped); and the
// hang section of the Markdown and HTML reports, compared with tests/golden/expected/hang_report.{md,html}
// (TT_UPDATE_GOLDEN=1 rewrites them; so does the update_golden target).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "golden.h"
#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/hang.h"

namespace tt::analyzer {
namespace {

using trace::CollectiveSide;
using trace::Ns;
constexpr Ns kMs = 1'000'000;
constexpr const char* kGloo = "00000000000000aa";
constexpr const char* kNccl = "00000000000000bb";

// Two ranks, each a process with a main thread and a GPU stream.
struct TwoRanks {
  trace::Trace t;
  std::uint32_t main[2], stream[2];
  TwoRanks() {
    for (int r = 0; r < 2; ++r) {
      trace::Process p;
      p.pid = 100 + r;
      p.rank = r;
      const auto proc = t.add_process(p);
      main[r] = t.add_thread({proc, 100 + r, "main"});
      trace::Device d;
      d.process = proc;
      stream[r] = t.add_stream({t.add_device(d), 7, ""});
    }
    t.metadata.emplace_back(fmt::format("nccl_comm:{}", kGloo), "c10d:gloo:0");
    t.metadata.emplace_back(fmt::format("nccl_comm:{}", kNccl), "nccl comm of 2 ranks");
  }
  void enter(int r, std::int64_t seq) {
    const auto name = fmt::format("tracetune.collective.enter AllReduce comm={} seq={} bytes=4096", kGloo, seq);
    t.ranges.push(seq * kMs, 0, main[r], t.strings.intern(name), trace::RangeKind::Instant, t.strings.intern("tracetune"));
  }
  void row(int r, const char* name, const char* comm, std::int64_t seq, CollectiveSide side, int channels = 2) {
    const std::uint32_t track = side == CollectiveSide::Device ? stream[r] : main[r];
    t.collectives.push(seq * kMs + kMs / 2, kMs / 4, track, t.strings.intern(name), t.strings.intern("allreduce"), 4096,
                       1024, t.strings.intern("ncclFloat32"), 2, t.strings.intern(comm), side, 0);
    t.collectives.seq.back() = seq;
    t.collectives.channels.back() = channels;
  }
  // Rank r's gloo all-reduces 0..entered-1 entered, 0..completed-1 completed.
  void gloo(int r, std::int64_t entered, std::int64_t completed) {
    for (std::int64_t s = 0; s < entered; ++s) enter(r, s);
    for (std::int64_t s = 0; s < completed; ++s) row(r, "glooAllReduce", kGloo, s, CollectiveSide::Host, 0);
  }
  // Rank r's NCCL all-reduces 0..enqueued-1 enqueued, 0..finished-1 finished on the GPU.
  void nccl(int r, std::int64_t enqueued, std::int64_t finished, int channels = 2) {
    for (std::int64_t s = 0; s < enqueued; ++s) row(r, "ncclAllReduce", kNccl, s, CollectiveSide::Host, channels);
    for (std::int64_t s = 0; s < finished; ++s) row(r, "ncclAllReduce", kNccl, s, CollectiveSide::Device, channels);
  }
};

std::map<std::int32_t, std::string> states(const HangReport& h) {
  std::map<std::int32_t, std::string> out;
  for (const auto& r : h.ranks) out[r.rank] = fmt::format("{} {} #{} on {} ({} bytes)", r.state, r.op, r.seq, r.communicator, r.bytes);
  return out;
}

TEST(Hang, GlooRankThatStoppedCallingIsNamed) {
  TwoRanks j;
  j.gloo(0, 51, 50);  // rank 0 waits in #50
  j.gloo(1, 50, 50);  // rank 1 never called it
  const auto h = diagnose_hang(j.t);
  ASSERT_TRUE(h);
  EXPECT_EQ(states(*h), (std::map<std::int32_t, std::string>{
                            {0, "stuck in collective AllReduce #50 on c10d:gloo:0 (4096 bytes)"},
                            {1, "never arrived AllReduce #50 on c10d:gloo:0 (4096 bytes)"}}));
}

TEST(Hang, NcclOperationEnqueuedButNeverFinishedNamesCommunicatorSeqOpAndBytes) {
  TwoRanks j;
  j.nccl(0, 53, 50);  // rank 0 enqueued #50..#52 ahead; its GPU waits in #50
  j.nccl(1, 50, 50);  // rank 1 never enqueued #50
  j.t.metadata.emplace_back("dump.reason", "no step for 60 s (hang)");
  const auto h = diagnose_hang(j.t);
  ASSERT_TRUE(h);
  EXPECT_EQ(states(*h), (std::map<std::int32_t, std::string>{
                            {0, "stuck in collective AllReduce #50 on nccl comm of 2 ranks (4096 bytes)"},
                            {1, "never arrived AllReduce #50 on nccl comm of 2 ranks (4096 bytes)"}}));
  EXPECT_EQ(h->ranks[1].last_seq, 49);
  EXPECT_NE(h->summary.find("rank 0 stuck in AllReduce #50 on nccl comm of 2 ranks (4096 bytes); never arrived: rank 1"),
            std::string::npos) << h->summary;
}

TEST(Hang, NcclRankMissingIsAHangInAWholeTraceToo) {
  TwoRanks j;
  j.nccl(0, 51, 50);
  j.nccl(1, 50, 50);
  EXPECT_TRUE(diagnose_hang(j.t));
}

TEST(Hang, FinishedNcclOperationsAreNoHang) {
  TwoRanks j;
  j.nccl(0, 50, 50);
  j.nccl(1, 50, 50);
  EXPECT_FALSE(diagnose_hang(j.t));
}

TEST(Hang, NcclOperationsInFlightOnEveryRankAreAHangOnlyInADump) {
  TwoRanks j;
  j.nccl(0, 51, 50);  // the last operation of a whole run still on the GPU when it ended
  j.nccl(1, 51, 50);
  EXPECT_FALSE(diagnose_hang(j.t));
  j.t.metadata.emplace_back("dump.reason", "tracetune capture --dump");
  const auto h = diagnose_hang(j.t);
  ASSERT_TRUE(h);
  EXPECT_NE(h->summary.find("no rank (all entered; none completed)"), std::string::npos) << h->summary;
}

TEST(Hang, NcclOperationsWithoutChannelsNeverGetADeviceRowAndAreNoHang) {
  TwoRanks j;  // NCCL 2.28 symmetric-memory collectives: nChannels 0
  j.nccl(0, 51, 0, 0);
  j.nccl(1, 50, 0, 0);
  EXPECT_FALSE(diagnose_hang(j.t));
}

std::string section(const std::string& report, const std::string& from, const std::string& to) {
  const auto a = report.find(from);
  if (a == std::string::npos) return "(no " + from + ")";
  return report.substr(a, report.find(to, a + from.size()) - a);
}

TEST(HangReport, MarkdownAndHtmlCarryTheDiagnosisAsTextAndJsonDo) {
  TwoRanks j;
  j.nccl(0, 51, 50);
  j.nccl(1, 50, 50);
  j.t.metadata.emplace_back("dump.reason", "no step for 60 s (hang)");
  j.t.finalize();
  const Analysis a = analyze(j.t, {}, "hang.dump-1.db");
  ASSERT_TRUE(a.hang);
  const std::string md = section(render_markdown(a), "## Hang", "## Findings");
  const std::string html = section(render_html(a), "<h2>Hang</h2>", "<h2>Findings</h2>");
  for (const auto* part : {"rank 0", "stuck in collective", "never arrived", "AllReduce", "#50", "4096", "nccl comm of 2 ranks"}) {
    EXPECT_NE(md.find(part), std::string::npos) << part << "\n" << md;
    EXPECT_NE(html.find(part), std::string::npos) << part << "\n" << html;
  }
  EXPECT_NE(render_text(a, false).find(a.hang->summary), std::string::npos);
  EXPECT_NE(render_json(a).find("\"hang\":{\"summary\":"), std::string::npos);
  compare_golden("hang_report.md", md);
  compare_golden("hang_report.html", html);
}

}  // namespace
}  // namespace tt::analyzer
