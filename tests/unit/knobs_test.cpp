#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tracetune/tuner/knobs.h"

using namespace tt::tuner;

namespace {

// A minimal valid knob; tests break one field at a time.
std::string knob(const std::string& extra_or_replacement = "", const std::string& id = "a.b") {
  return "schema = 1\n[[knob]]\nid = \"" + id +
         "\"\nchanges = \"c\"\napply = \"env\"\nenv = \"NCCL_X\"\ntype = \"int\"\nmin = 1\nmax = 8\n"
         "values = [1, 2]\naddresses = [\"cpu_bound\"]\nrisk = \"none\"\ndoc = \"d\"\n" +
         extra_or_replacement;
}

std::string error_of(const std::string& text) {
  auto r = parse_catalogue(text, "k.toml");
  return r ? std::string("(parsed)") : r.error();
}

}  // namespace

TEST(Knobs, BuiltinCatalogueLoadsAndCoversTheBrief) {
  auto cat = builtin_catalogue();
  ASSERT_TRUE(cat) << cat.error();
  for (const char* id : {"dataloader.num_workers", "dataloader.pin_memory", "dataloader.prefetch_factor",
                         "dataloader.persistent_workers", "ddp.bucket_cap_mb", "ddp.gradient_as_bucket_view",
                         "ddp.static_graph", "ddp.comm_hook", "torch.tf32_matmul", "torch.cudnn_tf32",
                         "torch.cudnn_benchmark", "amp.dtype", "compile.mode", "optimizer.foreach", "optimizer.fused",
                         "nccl.algo", "nccl.proto", "nccl.min_nchannels", "nccl.max_nchannels", "nccl.socket_nthreads",
                         "nccl.nsocks_perthread", "nccl.net_gdr_level", "nccl.buffsize", "nccl.tuner_table",
                         "cpu.omp_num_threads", "torch.num_threads", "torch.matmul_precision", "sdpa.backend",
                         "memory.channels_last"})
    EXPECT_NE(cat->find(id), nullptr) << id;
  const Knob* w = cat->find("dataloader.num_workers");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->apply, Apply::Python);
  EXPECT_EQ(w->type, KnobType::Int);
  EXPECT_EQ(*w->min, 0);
  const Knob* s = cat->find("nccl.socket_nthreads");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->apply, Apply::Env);
  EXPECT_EQ(s->env, "NCCL_SOCKET_NTHREADS");
  const Knob* hook = cat->find("ddp.comm_hook");
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(hook->risk, Risk::Numerics);
  EXPECT_TRUE(numerics_safe(*hook, Value(std::string("none"))));
  EXPECT_FALSE(numerics_safe(*hook, Value(std::string("fp16"))));
  EXPECT_EQ(cat->find("nccl.tuner_table")->apply, Apply::NcclTuner);
  std::set<std::string> env_vars;
  for (const auto& k : cat->knobs)
    if (k.apply == Apply::Env) {
      EXPECT_TRUE(env_vars.insert(k.env).second) << k.env;
    }
}

// PyTorch 2.x's accelerated implementations (issue 25): typed, allow-listed, numerics where due.
TEST(Knobs, Torch2ImplementationKnobsAreTypedAndRefuseOtherValues) {
  auto cat = builtin_catalogue();
  ASSERT_TRUE(cat) << cat.error();
  const Knob* precision = cat->find("torch.matmul_precision");
  const Knob* sdpa = cat->find("sdpa.backend");
  const Knob* channels_last = cat->find("memory.channels_last");
  ASSERT_NE(precision, nullptr);
  ASSERT_NE(sdpa, nullptr);
  ASSERT_NE(channels_last, nullptr);
  for (const Knob* k : {precision, sdpa, channels_last}) EXPECT_EQ(k->apply, Apply::Python) << k->id;
  EXPECT_EQ(precision->type, KnobType::Enum);
  for (const char* v : {"highest", "high", "medium"}) EXPECT_TRUE(check_value(*precision, Value(std::string(v)))) << v;
  for (const char* v : {"low", "HIGH", "tf32", ""}) EXPECT_FALSE(check_value(*precision, Value(std::string(v)))) << v;
  EXPECT_FALSE(check_value(*precision, Value(true)));
  EXPECT_EQ(precision->risk, Risk::Numerics);
  EXPECT_TRUE(numerics_safe(*precision, Value(std::string("highest"))));
  EXPECT_FALSE(numerics_safe(*precision, Value(std::string("high"))));
  EXPECT_FALSE(numerics_safe(*precision, Value(std::string("medium"))));
  EXPECT_EQ(sdpa->type, KnobType::Enum);
  for (const char* v : {"default", "math", "flash", "efficient", "cudnn"})
    EXPECT_TRUE(check_value(*sdpa, Value(std::string(v)))) << v;
  for (const char* v : {"xformers", "mem_efficient", "FLASH_ATTENTION", "none"})
    EXPECT_FALSE(check_value(*sdpa, Value(std::string(v)))) << v;
  EXPECT_EQ(sdpa->risk, Risk::None);
  EXPECT_EQ(channels_last->type, KnobType::Bool);
  EXPECT_TRUE(check_value(*channels_last, Value(true)));
  EXPECT_FALSE(check_value(*channels_last, Value(std::int64_t{1})));
  EXPECT_FALSE(check_value(*channels_last, Value(std::string("channels_last"))));
  EXPECT_EQ(channels_last->risk, Risk::None);
}

TEST(Knobs, MinimalCatalogueParses) {
  auto cat = parse_catalogue(knob(), "k.toml");
  ASSERT_TRUE(cat) << cat.error();
  ASSERT_EQ(cat->knobs.size(), 1u);
  EXPECT_EQ(cat->knobs[0].values.size(), 2u);
  EXPECT_EQ(std::get<std::int64_t>(cat->knobs[0].values[1]), 2);
}

TEST(Knobs, AsWrittenIsTheValueThatLeavesTheJobAsItIs) {
  auto cat = parse_catalogue(knob("as_written = 1\n"), "k.toml");
  ASSERT_TRUE(cat) << cat.error();
  ASSERT_TRUE(cat->knobs[0].as_written.has_value());
  EXPECT_EQ(std::get<std::int64_t>(*cat->knobs[0].as_written), 1);
  // the built-in catalogue marks the values the Python integration applies as nothing
  const Catalogue builtin = builtin_catalogue().value();
  for (const auto& [id, v] : std::vector<std::pair<std::string, Value>>{
           {"compile.mode", Value(std::string("none"))}, {"amp.dtype", Value(std::string("none"))},
           {"memory.channels_last", Value(false)}, {"ddp.comm_hook", Value(std::string("none"))},
           {"kernels.layernorm", Value(std::string("stock"))}}) {
    const Knob* k = builtin.find(id);
    ASSERT_NE(k, nullptr) << id;
    ASSERT_TRUE(k->as_written.has_value()) << id;
    EXPECT_TRUE(*k->as_written == v) << id;
  }
}

TEST(Knobs, MalformedTomlNamesFileAndLine) {
  const auto e = error_of("schema = 1\n[[knob]]\nid = \"a.b\nchanges = 1\n");
  EXPECT_NE(e.find("k.toml: line 3"), std::string::npos) << e;
}

TEST(Knobs, RefusesBrokenKnobsWithAClearMessage) {
  struct Case {
    std::string text, expect;
  } cases[] = {
      {knob("colour = \"red\"\n"), "unknown field 'colour'"},
      {"schema = 1\n[[knob]]\nid = \"a.b\"\n", "missing field 'changes'"},
      {knob("", "Bad Id"), "not dotted lower-case"},
      {knob("", "single"), "not dotted lower-case"},
      {knob() + "[[knob]]\n" + knob().substr(knob().find("id =")), "id defined twice"},
      {"schema = 2\n", "schema = 1"},
      {"schema = 1\n", "no [[knob]]"},
      {"schema = 1\nextra = 3\n[[knob]]\n", "unknown top-level key 'extra'"},
  };
  for (const auto& c : cases) {
    const auto e = error_of(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  }
}

TEST(Knobs, RefusesFieldsThatContradictTheType) {
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::string k = knob();
  struct Case {
    std::string text, expect;
  } cases[] = {
      {replace(k, "type = \"int\"", "type = \"integer\""), "type 'integer'"},
      {replace(k, "apply = \"env\"", "apply = \"shell\""), "apply 'shell'"},
      {replace(k, "risk = \"none\"", "risk = \"low\""), "risk 'low'"},
      {replace(k, "values = [1, 2]", "values = [1, 9]"), "values entry 9: out of range"},
      {replace(k, "values = [1, 2]", "values = [1, \"x\"]"), "expected an integer"},
      {replace(k, "min = 1\n", ""), "missing field 'min'"},
      {replace(k, "max = 8", "max = 0"), "min 1 is above max 0"},
      {replace(k, "min = 1", "min = 1.5"), "must be an integer"},
      {replace(k, "[\"cpu_bound\"]", "[\"gpu_slow\"]"), "\"gpu_slow\" is not a finding id"},
      {replace(k, "env = \"NCCL_X\"", "env = \"LD_PRELOAD\""), "makes the job load code"},
      {replace(k, "env = \"NCCL_X\"", "env = \"NCCL_NET_PLUGIN\""), "makes the job load code"},
      {replace(k, "env = \"NCCL_X\"", "env = \"nccl x\""), "not an environment variable name"},
      {replace(k, "env = \"NCCL_X\"\n", ""), "needs field 'env'"},
      {replace(k, "risk = \"none\"", "risk = \"numerics\""), "needs field 'safe'"},
      {replace(k, "values = [1, 2]", "values = [1, 2]\nchoices = [\"a\"]"), "only for enum"},
      {replace(k, "type = \"int\"", "type = \"table\""), "table knob cannot be applied through the environment"},
      {replace(k, "values = [1, 2]", "values = [1, 2]\nas_written = 9"), "as_written 9: out of range"},
      {replace(k, "values = [1, 2]", "values = [1, 2]\nas_written = \"x\""), "as_written \"x\": expected an integer"},
  };
  for (const auto& c : cases) {
    const auto e = error_of(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << e;
  }
}

TEST(Knobs, EnumListsAndCodeLoadingNames) {
  Knob k;
  k.type = KnobType::EnumList;
  k.choices = {"Ring", "Tree"};
  EXPECT_TRUE(check_value(k, Value(std::vector<std::string>{"Tree", "Ring"})));
  EXPECT_FALSE(check_value(k, Value(std::vector<std::string>{"Ring", "Ring"})));
  EXPECT_FALSE(check_value(k, Value(std::vector<std::string>{})));
  EXPECT_FALSE(check_value(k, Value(std::vector<std::string>{"ring"})));
  EXPECT_EQ(env_string(Value(std::vector<std::string>{"Tree", "Ring"})), "Tree,Ring");
  EXPECT_EQ(env_string(Value(true)), "1");
  for (const char* n : {"LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                        "NCCL_PROFILER_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_NET_PLUGIN", "SOME_PLUGIN", "FOO_PATH",
                        "TRACETUNE_APPLY", "BASH_ENV"})
    EXPECT_TRUE(is_code_loading_env(n)) << n;
  for (const char* n : {"NCCL_ALGO", "OMP_NUM_THREADS", "NCCL_SOCKET_NTHREADS", "NCCL_BUFFSIZE"})
    EXPECT_FALSE(is_code_loading_env(n)) << n;
}
