/* Status strings and names: every code has a distinct, non-empty text; unknown values are safe. */
#include <string.h>
#include "test_support.h"

static void every_status_has_text(void **state) {
  (void)state;
  for (int i = 0; i < LUMEN_STATUS_COUNT; i++) {
    const char *text = lumen_status_string((lumen_status)i);
    const char *name = lumen_status_name((lumen_status)i);
    assert_non_null(text);
    assert_non_null(name);
    assert_true(strlen(text) > 0);
    assert_string_not_equal(text, "unknown status");
    assert_string_not_equal(name, "unknown");
    for (int j = 0; j < i; j++) {
      assert_string_not_equal(text, lumen_status_string((lumen_status)j));
      assert_string_not_equal(name, lumen_status_name((lumen_status)j));
    }
  }
  assert_string_equal(lumen_status_string(LUMEN_OK), "success");
  assert_string_equal(lumen_status_name(LUMEN_ERR_INVALID_ARGUMENT), "invalid_argument");
}

static void unknown_status_is_safe(void **state) {
  (void)state;
  assert_string_equal(lumen_status_string(LUMEN_STATUS_COUNT), "unknown status");
  assert_string_equal(lumen_status_string((lumen_status)-1), "unknown status");
  assert_string_equal(lumen_status_name((lumen_status)9999), "unknown");
}

LUMEN_TEST_MAIN(cmocka_unit_test(every_status_has_text),
                cmocka_unit_test(unknown_status_is_safe))
