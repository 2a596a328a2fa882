// Internal to the GPU benches: a shared library opened with dlopen and its entry points looked
// up by name, so tracetune has no link-time dependency on CUDA, cuBLAS or NCCL. Libraries are
// never closed: the CUDA driver, cuBLAS and NCCL keep threads and state for the process's
// life, and unloading them under those is not safe (tracetune is a short-lived command).
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace tt::tuner::detail {

class DlLib {
 public:
  DlLib(std::initializer_list<const char*> names) {
    for (const char* n : names) {
      handle_ = ::dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) {
        name_ = n;
        break;
      }
    }
  }
  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }
  // Sets fn to the entry point `symbol`; remembers the first one missing.
  template <class F>
  void sym(F& fn, const char* symbol) {
    fn = handle_ != nullptr ? reinterpret_cast<F>(::dlsym(handle_, symbol)) : nullptr;
    if (fn == nullptr && missing_.empty()) missing_ = symbol;
  }
  // The first of several names (a versioned symbol, then the older one).
  template <class F>
  void sym_first(F& fn, std::initializer_list<const char*> symbols) {
    fn = nullptr;
    for (const char* s : symbols)
      if (fn == nullptr && handle_ != nullptr) fn = reinterpret_cast<F>(::dlsym(handle_, s));
    if (fn == nullptr && missing_.empty()) missing_ = *symbols.begin();
  }
  // "" when loaded and every entry point was found, else why not.
  std::string problem(const char* what) const {
    if (handle_ == nullptr) return std::string(what) + " is not installed";
    if (!missing_.empty()) return name_ + " lacks " + missing_;
    return {};
  }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string missing_;
};

// The CUDA runtime entry points the benches share. cudaError_t is an int-sized enum
// (cudaSuccess 0); streams and events are opaque pointers (cuda_runtime_api.h, CUDA 13).
struct CudaRuntime {
  DlLib lib{"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  int (*GetDeviceCount)(int*) = nullptr;
  int (*SetDevice)(int) = nullptr;
  int (*Malloc)(void**, std::size_t) = nullptr;
  int (*Free)(void*) = nullptr;
  int (*Memcpy)(void*, const void*, std::size_t, int) = nullptr;  // kind 1: host to device
  int (*Memset)(void*, int, std::size_t) = nullptr;
  int (*DeviceSynchronize)() = nullptr;
  int (*StreamCreateWithFlags)(void**, unsigned) = nullptr;  // flag 1: cudaStreamNonBlocking
  int (*StreamDestroy)(void*) = nullptr;
  int (*StreamSynchronize)(void*) = nullptr;
  int (*EventCreate)(void**) = nullptr;
  int (*EventDestroy)(void*) = nullptr;
  int (*EventRecord)(void*, void*) = nullptr;
  int (*EventSynchronize)(void*) = nullptr;
  int (*EventElapsedTime)(float*, void*, void*) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  std::string error;

  CudaRuntime() {
    lib.sym(GetDeviceCount, "cudaGetDeviceCount");
    lib.sym(SetDevice, "cudaSetDevice");
    lib.sym(Malloc, "cudaMalloc");
    lib.sym(Free, "cudaFree");
    lib.sym(Memcpy, "cudaMemcpy");
    lib.sym(Memset, "cudaMemset");
    lib.sym(DeviceSynchronize, "cudaDeviceSynchronize");
    lib.sym(StreamCreateWithFlags, "cudaStreamCreateWithFlags");
    lib.sym(StreamDestroy, "cudaStreamDestroy");
    lib.sym(StreamSynchronize, "cudaStreamSynchronize");
    lib.sym(EventCreate, "cudaEventCreate");
    lib.sym(EventDestroy, "cudaEventDestroy");
    lib.sym(EventRecord, "cudaEventRecord");
    lib.sym(EventSynchronize, "cudaEventSynchronize");
    lib.sym(EventElapsedTime, "cudaEventElapsedTime");
    lib.sym(GetErrorString, "cudaGetErrorString");
    error = lib.problem("the CUDA runtime (libcudart.so)");
  }
  std::string why(int rc) const {
    return GetErrorString != nullptr ? std::string(GetErrorString(rc)) : "CUDA error " + std::to_string(rc);
  }
};

}  // namespace tt::tuner::detail
