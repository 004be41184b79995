/* GPU filter ops against the CPU ops (every boundary mode, FULL/HALF/BFLOAT16, random and
   natural-image-like data), the device memory report, the CPU rerun after device failures.
   The checks live in tests/gpu/gpu_filter_checks.c (plain C, also built as the cmocka-free program
   gpu_filter_check for the GPU machine); each group is one cmocka test here. Skips (77) without a
   usable CUDA device. */
#define GPU_FILTER_CHECKS_NO_MAIN
#include "../gpu/gpu_filter_checks.c"
#include "test_support.h"

static void run_group(const char *name) {
  int failures = gpu_filter_checks_run(stdout, name);
  assert_int_equal(failures, 0);
}

static void gaussian(void **state) { (void)state; run_group("gaussian"); }
static void dog_log_conv(void **state) { (void)state; run_group("dog_log_conv"); }
static void rank(void **state) { (void)state; run_group("rank"); }
static void point_threshold(void **state) { (void)state; run_group("point_threshold"); }
static void fallback_memory(void **state) { (void)state; run_group("fallback_memory"); }
static void region(void **state) { (void)state; run_group("region"); }

int main(void) {
  char reason[256] = "";
  int ndev = lumen_test_cuda_devices(reason, sizeof reason);
  if (ndev < 0) return 1;
  if (ndev < 1) {
    printf("test_gpu_filter: skipped, no CUDA device (%s)\n", reason);
    return LUMEN_TEST_SKIP;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gaussian),        cmocka_unit_test(dog_log_conv),    cmocka_unit_test(rank),
      cmocka_unit_test(point_threshold), cmocka_unit_test(fallback_memory), cmocka_unit_test(region),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
