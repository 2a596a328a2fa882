// A CPU-only program driving the NVTX3 C API (header-only, no CUDA), run by nvtx_test.py with
// the collector injected (LD_PRELOAD + NVTX_INJECTION64_PATH). It checks the values NVTX
// returns to it (push/pop levels, schema ids, handles) itself and prints "CHECK-FAIL ..." for
// each mismatch; the records it causes are checked by nvtx_test.py from the .ttr files.
//
// Built twice by the test: once as a shared library with -DTT_NVTX_SECOND_INSTANCE (a second,
// independent NVTX instance, like a library embedding NVTX: it makes NVTX call
// InitializeInjectionNvtx2 a second time) and once as the program, linked with that library.
//
// `nvtx_program nccl /path/to/libnccl.so.2` instead calls a real NCCL (no GPU needed): its
// collectives push their NVTX range (domain "NCCL", extended payload) before rejecting the
// null communicator.
//
// Output lines the test reads: "TID <role> <tid>", "VALUE <name> <value>", "CHECK-FAIL ...",
// "DONE".
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

extern "C" int tt_second_instance_work(nvtxDomainHandle_t* domain_out);

#if defined(TT_NVTX_SECOND_INSTANCE)

// The second NVTX instance: its own globals (hidden in this .so), its own injection init.
extern "C" __attribute__((visibility("default"))) int tt_second_instance_work(nvtxDomainHandle_t* domain_out) {
  *domain_out = nvtxDomainCreateA("tt-test");  // same name as in the program: same handle
  const int level = nvtxRangePushA("second-instance");
  nvtxRangePop();
  return level;
}

#else

namespace {

int failures = 0;

void check(bool ok, const char* what, long long got, long long want) {
  if (!ok) {
    std::printf("CHECK-FAIL %s: got %lld, want %lld\n", what, got, want);
    ++failures;
  }
}
void check_eq(const char* what, long long got, long long want) { check(got == want, what, got, want); }

unsigned tid() { return static_cast<unsigned>(syscall(SYS_gettid)); }

nvtxEventAttributes_t attr_ascii(const char* msg) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  return a;
}

// NCCL-like payload: {uint64 comm; size_t bytes; int op}, as NCCL's AllReduce schema.
struct AllReduceParams {
  std::uint64_t comm;
  std::size_t bytes;
  int op;
};
struct SendParams {
  std::uint64_t comm;
  std::size_t bytes;
  int peer;
};
struct CustomParams {
  std::uint32_t kind;
  std::uint32_t elements;
  std::uint64_t total_bytes;
};

void worker(nvtxRangeId_t cross_id, std::atomic<nvtxRangeId_t>* back_id) {
  std::printf("TID worker %u\n", tid());
  nvtxNameOsThreadA(tid(), "tt-worker");
  check_eq("worker push w-outer", nvtxRangePushA("w-outer"), 0);
  check_eq("worker push w-inner", nvtxRangePushA("w-inner"), 1);
  nvtxMarkA("w-mark");
  check_eq("worker pop w-inner", nvtxRangePop(), 1);
  check_eq("worker pop w-outer", nvtxRangePop(), 0);
  // A range started on the main thread, ended here.
  nvtxRangeEnd(cross_id);
  // A range started here, ended on the main thread: category 3, int32 payload -7.
  nvtxEventAttributes_t a = attr_ascii("cross-back");
  a.category = 3;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
  a.payload.iValue = -7;
  back_id->store(nvtxRangeStartEx(&a));
}

void deep_worker() {
  std::printf("TID deep %u\n", tid());
  // 300 nested levels: deeper than the collector's per-thread stack (256).
  for (int i = 0; i < 300; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "deep-%d", i);
    const int level = nvtxRangePushA(name);
    if (i < 256) check_eq("deep push level", level, i);
  }
  for (int i = 299; i >= 0; --i) {
    const int level = nvtxRangePop();
    if (i < 256) check_eq("deep pop level", level, i);
  }
  check_eq("deep pop on empty stack", nvtxRangePop() < 0 ? -1 : 0, -1);
  check_eq("deep push after unwinding", nvtxRangePushA("deep-after"), 0);
  check_eq("deep pop after unwinding", nvtxRangePop(), 0);
}

// Real NCCL, CPU only: ncclAllReduce / ncclAllGather with a null communicator open and close
// their NVTX range (with the byte count in the payload) and return ncclInvalidArgument.
int nccl_probe(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::printf("CHECK-FAIL dlopen %s: %s\n", path, dlerror());
    return 3;
  }
  using GetVersion = int (*)(int*);
  using AllReduce = int (*)(const void*, void*, std::size_t, int, int, void*, void*);
  using AllGather = int (*)(const void*, void*, std::size_t, int, void*, void*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(h, "ncclGetVersion"));
  auto all_reduce = reinterpret_cast<AllReduce>(dlsym(h, "ncclAllReduce"));
  auto all_gather = reinterpret_cast<AllGather>(dlsym(h, "ncclAllGather"));
  if (get_version == nullptr || all_reduce == nullptr || all_gather == nullptr) {
    std::printf("CHECK-FAIL NCCL symbols missing in %s\n", path);
    return 3;
  }
  int version = 0;
  get_version(&version);
  std::printf("TID main %u\n", tid());
  std::printf("VALUE nccl_version %d\n", version);
  constexpr int kFloat32 = 7, kSum = 0, kInvalidArgument = 4;
  check_eq("push nccl-probe", nvtxRangePushA("nccl-probe"), 0);
  check_eq("ncclAllReduce(1024 floats, no comm)", all_reduce(nullptr, nullptr, 1024, kFloat32, kSum, nullptr, nullptr),
           kInvalidArgument);
  check_eq("ncclAllReduce(256 floats, no comm)", all_reduce(nullptr, nullptr, 256, kFloat32, kSum, nullptr, nullptr),
           kInvalidArgument);
  check_eq("ncclAllGather(100 floats, no comm)", all_gather(nullptr, nullptr, 100, kFloat32, nullptr, nullptr),
           kInvalidArgument);
  check_eq("pop nccl-probe", nvtxRangePop(), 0);
  std::printf("VALUE failures %d\n", failures);
  std::printf("DONE\n");
  std::fflush(stdout);
  return failures == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "nccl") == 0) return nccl_probe(argv[2]);
  nvtxInitialize(nullptr);
  std::printf("TID main %u\n", tid());
  nvtxNameOsThreadA(tid(), "tt-main");

  // ---- default domain: categories, marks, nested push/pop ----
  nvtxNameCategoryA(7, "io");
  nvtxNameCategoryW(8, L"wide-cat-\u00e9");
  nvtxNameCategoryA(7, "io");  // same name again: no second category mark
  nvtxMarkA("mark-a");
  nvtxMarkW(L"mark-w-\u00fc\u03a9");
  {
    nvtxEventAttributes_t a = attr_ascii("mark-ex");
    a.category = 7;
    nvtxMarkEx(&a);
  }
  check_eq("push outer", nvtxRangePushA("outer"), 0);
  check_eq("push middle", nvtxRangePushW(L"middle-\u03a9"), 1);
  {
    nvtxEventAttributes_t a = attr_ascii("inner");
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF00FF00u;
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 12345;
    check_eq("push inner", nvtxRangePushEx(&a), 2);
  }
  check_eq("pop inner", nvtxRangePop(), 2);
  check_eq("pop middle", nvtxRangePop(), 1);
  check_eq("pop outer", nvtxRangePop(), 0);
  check_eq("pop on empty stack", nvtxRangePop() < 0 ? -1 : 0, -1);

  // ---- start/end ranges across threads, a second thread with its own stack ----
  const nvtxRangeId_t cross = nvtxRangeStartA("cross-thread");
  check(cross != 0, "start id is non-zero", static_cast<long long>(cross), 1);
  const nvtxRangeId_t wide = nvtxRangeStartW(L"start-w-\u00e9");
  check(wide != cross && wide != 0, "start ids are distinct", static_cast<long long>(wide), 0);
  std::atomic<nvtxRangeId_t> back{0};
  check_eq("main push around worker", nvtxRangePushA("main-while-worker"), 0);
  std::thread t(worker, cross, &back);
  t.join();
  check_eq("main pop around worker", nvtxRangePop(), 0);
  nvtxRangeEnd(back.load());
  nvtxRangeEnd(wide);
  nvtxRangeEnd(wide);  // ending twice: ignored
  nvtxRangeEnd(0);     // unknown id: ignored

  // ---- a named domain: categories, registered strings, per-domain levels ----
  nvtxDomainHandle_t d = nvtxDomainCreateA("tt-test");
  check(d != nullptr, "domain handle", 0, 1);
  nvtxDomainNameCategoryA(d, 1, "compute");
  nvtxDomainNameCategoryW(d, 2, L"comm");
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(d, "registered-op");
  nvtxStringHandle_t reg_w = nvtxDomainRegisterStringW(d, L"registered-w-\u00e9");
  check(reg != nullptr && reg_w != nullptr && reg != reg_w, "registered string handles", 0, 1);
  {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    a.category = 1;
    check_eq("domain push registered-op", nvtxDomainRangePushEx(d, &a), 0);
  }
  check_eq("default push inside domain range", nvtxRangePushA("default-in-domain"), 0);
  {
    nvtxEventAttributes_t a = attr_ascii("d-inner");
    a.category = 2;
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.5;
    check_eq("domain push d-inner", nvtxDomainRangePushEx(d, &a), 1);
  }
  {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg_w;
    a.category = 2;
    nvtxDomainMarkEx(d, &a);
  }
  // Pops are per domain: this closes d-inner, not default-in-domain.
  check_eq("domain pop d-inner", nvtxDomainRangePop(d), 1);
  check_eq("default pop default-in-domain", nvtxRangePop(), 0);
  check_eq("domain pop registered-op", nvtxDomainRangePop(d), 0);
  check_eq("domain pop on empty", nvtxDomainRangePop(d) < 0 ? -1 : 0, -1);
  {
    nvtxEventAttributes_t a = attr_ascii("d-startend");
    a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
    a.payload.fValue = 0.5f;
    const nvtxRangeId_t id = nvtxDomainRangeStartEx(d, &a);
    nvtxDomainRangeEnd(d, id);
  }
  nvtxDomainHandle_t dw = nvtxDomainCreateW(L"tt-wide-\u00e9");
  {
    nvtxEventAttributes_t a = attr_ascii("wide-domain-range");
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    a.payload.uiValue = 4000000000u;
    check_eq("wide domain push", nvtxDomainRangePushEx(dw, &a), 0);
    check_eq("wide domain pop", nvtxDomainRangePop(dw), 0);
  }
  nvtxDomainDestroy(dw);

  // ---- fork: the child uses handles made before the fork; a range is open across it ----
  check_eq("push across-fork", nvtxRangePushA("across-fork"), 0);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    std::printf("TID child %u\n", tid());
    std::printf("CHILDPID %d\n", static_cast<int>(getpid()));
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    a.category = 1;
    check_eq("child: domain push registered-op", nvtxDomainRangePushEx(d, &a), 0);
    a.message.registered = reg_w;
    a.category = 2;
    nvtxDomainMarkEx(d, &a);
    check_eq("child: domain pop", nvtxDomainRangePop(d), 0);
    check_eq("child: pop across-fork", nvtxRangePop(), 0);
    check_eq("child: push child-range", nvtxRangePushA("child-range"), 0);
    check_eq("child: pop child-range", nvtxRangePop(), 0);
    std::printf("CHILD-DONE\n");
    std::fflush(stdout);
    _exit(failures == 0 ? 0 : 3);
  }
  int status = 0;
  check(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "fork child ran and exited 0", status, 0);
  check_eq("pop across-fork", nvtxRangePop(), 0);

  // ---- NCCL-like domain with extended payloads (payload extension) ----
  nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  {
    static const nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(AllReduceParams, comm), nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(AllReduceParams, bytes), nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Reduction operation", nullptr, 0, offsetof(AllReduceParams, op), nullptr, nullptr},
    };
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attr.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attr.entries = entries;
    attr.numEntries = 3;
    attr.payloadStaticSize = sizeof(AllReduceParams);
    attr.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
    const std::uint64_t id = nvtxPayloadSchemaRegister(nccl, &attr);
    check_eq("static schema id", static_cast<long long>(id), static_cast<long long>(NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5));

    static const nvtxPayloadEnum_t ops[] = {{"Sum", 0, 0}, {"Prod", 1, 0}};
    nvtxPayloadEnumAttr_t eattr{};
    eattr.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                      NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    eattr.entries = ops;
    eattr.numEntries = 2;
    eattr.sizeOfEnum = sizeof(int);
    eattr.schemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 11;
    check_eq("enum schema id", static_cast<long long>(nvtxPayloadEnumRegister(nccl, &eattr)),
             static_cast<long long>(NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 11));
    check_eq("domain enabled", nvtxDomainIsEnabled(nccl), 1);

    nvtxStringHandle_t fn = nvtxDomainRegisterStringA(nccl, "ncclAllReduce");
    AllReduceParams p{0xabcdefull, 1048576, 0};
    nvtxPayloadData_t pd[] = {{NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5, sizeof p, &p}};
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = fn;
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pd));
    check_eq("nccl push", nvtxDomainRangePushEx(nccl, &a), 0);
    check_eq("nccl pop", nvtxDomainRangePop(nccl), 0);
  }
  {
    // A static NCCL schema id that was never registered (Send, SID 9): NCCL's fixed layout.
    nvtxStringHandle_t fn = nvtxDomainRegisterStringA(nccl, "ncclSend");
    SendParams p{0xabcdefull, 4096, 1};
    nvtxPayloadData_t pd[] = {{NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 9, sizeof p, &p}};
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = fn;
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(pd));
    check_eq("nccl send push", nvtxDomainRangePushEx(nccl, &a), 0);
    check_eq("nccl send pop", nvtxDomainRangePop(nccl), 0);
  }
  {
    // A dynamic schema with a name and automatic offsets, used by the payload-only API.
    static const nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "kind", nullptr, 0, 0, nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "elements", nullptr, 0, 0, nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "total bytes", nullptr, 0, 0, nullptr, nullptr},
    };
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES;
    attr.name = "tt-schema";
    attr.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attr.entries = entries;
    attr.numEntries = 3;
    const std::uint64_t id = nvtxPayloadSchemaRegister(d, &attr);
    check(id >= NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START, "dynamic schema id", static_cast<long long>(id),
          static_cast<long long>(NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START));
    CustomParams p{1, 2, 777};
    nvtxPayloadData_t pd = {id, sizeof p, &p};
    check_eq("payload push", nvtxRangePushPayload(d, &pd, 1), 0);
    check_eq("payload pop", nvtxRangePopPayload(d, &pd, 1), 0);
  }

  // ---- a second NVTX instance (second injection init) and a deep stack ----
  nvtxDomainHandle_t d2 = nullptr;
  check_eq("second instance push level", tt_second_instance_work(&d2), 0);
  check(d2 == d, "same domain handle from the second instance", 0, 1);
  std::thread deep(deep_worker);
  deep.join();

  // A range left open at exit is not recorded.
  nvtxRangePushA("left-open");

  std::printf("VALUE failures %d\n", failures);
  std::printf("DONE\n");
  std::fflush(stdout);
  return failures == 0 ? 0 : 3;
}

#endif
