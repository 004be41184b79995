/* lumen demo: placeholder until the fitting engine lands (issue 3). */
#include <stdio.h>
#include "cli/cli.h"

int lumen_cmd_demo(int argc, char **argv) {
  (void)argc;
  (void)argv;
  char *args[] = {"backends", NULL};
  return lumen_cmd_backends(1, args);
}
