/* A stand-in for PyTorch's libcupti.so.13 (soname libcupti.so.13, set by the build): the one
 * function the collector interposes, returning a value no real CUPTI returns, so a test that
 * loads this library RTLD_LOCAL (as torch/_C loads PyTorch's copy) can tell whether a call
 * through the interposer reached it. */
__attribute__((visibility("default"))) int cuptiActivityRegisterCallbacks(void* request, void* complete) {
  (void)request;
  (void)complete;
  return 4242;
}
