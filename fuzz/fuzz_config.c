/* libFuzzer target: the pipeline config parser (lumen_pipe_config_read: key = value files,
   lumen's option names and ROCKETSHIP dce_preferences.txt keys). */
#include "fuzz_common.h"
#include "lumen/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  const char *path = fuzz_file("config", ".txt", data, size);
  lumen_pipe_config cfg;
  lumen_pipe_config_init(&cfg);
  (void)lumen_pipe_config_read(ctx, &cfg, path);
  lumen_pipe_config_clear(&cfg);
  unlink(path);
  return 0;
}
