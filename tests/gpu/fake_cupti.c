/* A stand-in for PyTorch's libcupti.so.13 (soname libcupti.so.13, set by the build), loaded
 * RTLD_LOCAL by the tests as torch/_C loads PyTorch's copy.
 *
 * It models what the coexistence with another profiler depends on, nothing more:
 *  - one set of buffer callbacks per process. A record needs a buffer: the current one, else a
 *    new one from the request callback registered *now*. A flush completes the current buffer
 *    to the completion callback registered *now* -- a re-registration does not hand the
 *    current buffer back, as real CUPTI does not (torch.profiler's Kineto then got our
 *    buffers: "bufferCompleted called with unknown buffer");
 *  - the process-wide settings (zeroed buffers, thread id type, timestamp callback), read back
 *    as they stood at the last registration of buffer callbacks;
 *  - enough of the rest for the injection library's session to start (no records to decode).
 * cuptiActivityRegisterCallbacks(NULL, NULL) returns 4242, a value no real CUPTI returns, so a
 * test can tell whether a call through the collector's interposer reached this library. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*RequestFn)(uint8_t**, size_t*, size_t*);
typedef void (*CompleteFn)(void*, uint32_t, uint8_t*, size_t, size_t);
typedef uint64_t (*TimestampFn)(void);

enum { kSuccess = 0, kInvalidParameter = 1, kMaxLimitReached = 12, kZeroedOutAttribute = 5 };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static RequestFn g_request;
static CompleteFn g_complete;
static uint8_t* g_buffer;          /* the buffer records go into now, NULL when none */
static size_t g_size, g_used;
static CompleteFn g_buffer_owner;  /* the completion callback of whoever supplied g_buffer */
static long g_misdelivered;        /* buffers completed to a profiler that did not supply them */
static long g_dropped;             /* records with no buffer (the request was refused) */
static uint8_t g_zeroed;
static int g_thread_id_type;
static TimestampFn g_timestamp;
static int g_at_registration[3];   /* zeroed, thread id type, timestamp callback set */
static uint64_t g_clock_at_registration;

EXPORT int cuptiActivityRegisterCallbacks(RequestFn request, CompleteFn complete) {
  if (request == NULL && complete == NULL) return 4242;
  if (request == NULL || complete == NULL) return kInvalidParameter;
  pthread_mutex_lock(&g_lock);
  g_request = request;
  g_complete = complete;
  g_at_registration[0] = g_zeroed;
  g_at_registration[1] = g_thread_id_type;
  g_at_registration[2] = g_timestamp != NULL;
  g_clock_at_registration = g_timestamp != NULL ? g_timestamp() : 0;
  pthread_mutex_unlock(&g_lock);
  return kSuccess;
}

/* One activity record of `bytes` bytes, written as CUPTI writes one. */
EXPORT void fake_cupti_write(size_t bytes) {
  pthread_mutex_lock(&g_lock);
  if (g_buffer == NULL && g_request != NULL) {
    size_t max_records = 0;
    g_request(&g_buffer, &g_size, &max_records);
    g_used = 0;
    g_buffer_owner = g_complete;
  }
  if (g_buffer == NULL || g_used + bytes > g_size) {
    ++g_dropped;
  } else {
    memset(g_buffer + g_used, 0xC5, bytes);
    g_used += bytes;
  }
  pthread_mutex_unlock(&g_lock);
}

EXPORT int cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;  /* every record here is complete */
  pthread_mutex_lock(&g_lock);
  if (g_buffer != NULL) {
    if (g_complete != g_buffer_owner) ++g_misdelivered;
    g_complete(NULL, 0, g_buffer, g_size, g_used);
    g_buffer = NULL;
  }
  pthread_mutex_unlock(&g_lock);
  return kSuccess;
}

EXPORT long fake_cupti_misdelivered(void) { return g_misdelivered; }
EXPORT long fake_cupti_dropped(void) { return g_dropped; }
/* The settings at the last registration: which = 0 zeroed buffers, 1 thread id type, 2 whether
 * a timestamp callback was registered; 3 its value then (0 when none). */
EXPORT uint64_t fake_cupti_at_registration(int which) {
  return which == 3 ? g_clock_at_registration : (uint64_t)g_at_registration[which];
}

EXPORT int cuptiActivitySetAttribute(int attribute, size_t* size, void* value) {
  if (attribute == kZeroedOutAttribute && size != NULL && *size >= 1) g_zeroed = *(uint8_t*)value;
  return kSuccess;
}
EXPORT int cuptiSetThreadIdType(int type) {
  g_thread_id_type = type;
  return kSuccess;
}
EXPORT int cuptiActivityRegisterTimestampCallback(TimestampFn f) {
  if (f == NULL) return kInvalidParameter;
  g_timestamp = f;
  return kSuccess;
}
EXPORT int cuptiSubscribe(void** handle, void* callback, void* data) {
  (void)callback;
  (void)data;
  *handle = (void*)&g_lock;
  return kSuccess;
}
EXPORT int cuptiUnsubscribe(void* handle) {
  (void)handle;
  return kSuccess;
}
EXPORT int cuptiActivityEnable(int kind) {
  (void)kind;
  return kSuccess;
}
EXPORT int cuptiActivityDisable(int kind) {
  (void)kind;
  return kSuccess;
}
EXPORT int cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, void** record) {
  (void)buffer;
  (void)valid;
  (void)record;
  return kMaxLimitReached;  /* the bytes written here are not records to decode */
}
EXPORT int cuptiActivityGetNumDroppedRecords(void* context, uint32_t stream, size_t* dropped) {
  (void)context;
  (void)stream;
  *dropped = 0;
  return kSuccess;
}
EXPORT int cuptiGetCallbackName(int domain, uint32_t cbid, const char** name) {
  (void)domain;
  (void)cbid;
  (void)name;
  return kInvalidParameter;
}
