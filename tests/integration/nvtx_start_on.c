/* Target program for window_test.py's start_on_nvtx case: NVTX ranges (header-only NVTX3, no
 * CUDA) before, at and after the one `record --start-on '^train_phase$'` waits for. The window
 * opens at the push of "train_phase": the "warmup" ranges and mark before it stay out, it and
 * everything after it are recorded.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(void) {
  char name[32];
  for (int i = 0; i < 5; ++i) {
    snprintf(name, sizeof name, "warmup %d", i);
    nvtxRangePushA(name);
    nvtxRangePop();
  }
  nvtxMarkA("before");
  nvtxRangePushA("train_phase");
  nvtxMarkA("inside");
  nvtxRangePop();
  for (int i = 0; i < 3; ++i) {
    snprintf(name, sizeof name, "after %d", i);
    const nvtxRangeId_t id = nvtxRangeStartA(name);
    nvtxRangeEnd(id);
  }
  return 0;
}
