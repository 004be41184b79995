/* The few cmocka calls lumen's GPU tests use, for the GPU machine where cmocka is not installed
   (no -dev packages): each test is a function; a failed assertion longjmps out of it. Used only by
   gpu_fit_check (tests/gpu/CMakeLists.txt), built from tests/unit/test_gpu_fit.c when cmocka is
   absent. Exit codes: 0 all passed, 1 a failure. */
#ifndef LUMEN_CMOCKA_SHIM_H
#define LUMEN_CMOCKA_SHIM_H
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static jmp_buf shim_jmp_;
static volatile int shim_skipped_;
#define print_error(...) fprintf(stderr, __VA_ARGS__)
#define shim_fail_(what)                                                       \
  do {                                                                         \
    fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what);             \
    longjmp(shim_jmp_, 1);                                                     \
  } while (0)
#define fail() shim_fail_("fail()")
#define skip()                  \
  do {                          \
    shim_skipped_ = 1;          \
    longjmp(shim_jmp_, 2);      \
  } while (0)
#define assert_true(c) \
  do {                 \
    if (!(c)) shim_fail_(#c); \
  } while (0)
#define assert_false(c) assert_true(!(c))
#define assert_int_equal(a, b) assert_true((intmax_t)(a) == (intmax_t)(b))
#define assert_non_null(p) assert_true((p) != NULL)
#define assert_null(p) assert_true((p) == NULL)
#define assert_string_equal(a, b) assert_true(strcmp((a), (b)) == 0)
#define assert_string_not_equal(a, b) assert_true(strcmp((a), (b)) != 0)
#define assert_memory_equal(a, b, n) assert_true(memcmp((a), (b), (n)) == 0)

struct CMUnitTest {
  const char *name;
  void (*fn)(void **);
  int (*setup)(void **);
  int (*teardown)(void **);
};
#define cmocka_unit_test(f) {#f, f, NULL, NULL}
#define cmocka_unit_test_teardown(f, t) {#f, f, NULL, t}
#define cmocka_unit_test_setup_teardown(f, s, t) {#f, f, s, t}
#define cmocka_run_group_tests(tests, a, b) shim_run_(tests, (int)(sizeof(tests) / sizeof(tests[0])))
static inline int shim_run_(const struct CMUnitTest *t, int n) {
  volatile int failed = 0;
  for (int i = 0; i < n; ++i) {
    void *state = NULL;
    shim_skipped_ = 0;
    if (t[i].setup && t[i].setup(&state) != 0) {
      printf("FAIL %s (setup)\n", t[i].name);
      ++failed;
      continue;
    }
    volatile int r = setjmp(shim_jmp_);
    if (r == 0) t[i].fn(&state);
    if (t[i].teardown) t[i].teardown(&state);
    printf("%s %s\n", r == 1 ? "FAIL" : (r == 2 ? "SKIP" : "PASS"), t[i].name);
    failed += r == 1;
  }
  return failed ? 1 : 0;
}
/* cmocka's group runner with setup and teardown (tests/unit/test_support.c lumen_test_run_in_dir) */
typedef int (*CMFixtureFunction)(void **state);
static inline int _cmocka_run_group_tests(const char *group, const struct CMUnitTest *t, size_t n,
                                          CMFixtureFunction setup, CMFixtureFunction teardown) {
  void *state = NULL;
  (void)group;
  if (setup && setup(&state) != 0) return 1;
  int rc = shim_run_(t, (int)n);
  if (teardown && teardown(&state) != 0) rc = 1;
  return rc;
}
#endif
