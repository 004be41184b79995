/* lumen view OUTDIR: a read-only viewer of a finished `lumen dce` output folder in the browser
   (docs/VIEW.md): a small HTTP server (src/view/) on 127.0.0.1 unless --bind says otherwise. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"

static const char *cmd = "view";

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen view OUTDIR [--port N] [--bind ADDR] [--open]\n\n"
          "Serves a read-only viewer of a finished 'lumen dce' output folder: pick a map and a slice, click a\n"
          "voxel (or move with the arrow keys) to see its measured concentration, every fitted model's curve\n"
          "(drawn by lumen's model code) and the AIF, with each model's parameters, 95 %% intervals, state,\n"
          "R^2 and AIC; draw a rectangle for an ROI's mean curve and statistics (CSV download).\n"
          "The measured curves need the run's concentration series: 'lumen dce ... --save-conc'.\n\n"
          "options:\n"
          "  --port N      port to listen on (default 0: a free one, printed)\n"
          "  --bind ADDR   address to listen on (default 127.0.0.1: this machine only); anything else\n"
          "                is reachable from other machines: give it only on a network you trust\n"
          "  --open        open the page in the default browser (xdg-open)\n"
          "Stops with Ctrl-C (SIGINT) or SIGTERM. Nothing in OUTDIR is written.\n");
}

#if LUMEN_HAVE_VIEW
#include "view/view_http.h"

int lumen_cmd_view(int argc, char **argv) {
  const char *dir = NULL, *bind = "127.0.0.1";
  int port = 0, open_browser = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      help(stdout);
      return lumen_cli_finish_stdout(cmd);
    } else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
      char *end = NULL;
      long p = strtol(argv[++i], &end, 10);
      if (*end || p < 0 || p > 65535) {
        lumen_cli_error(cmd, "--port '%s': expected 0..65535 (0: a free port)", argv[i]);
        return LUMEN_EXIT_USAGE;
      }
      port = (int)p;
    } else if (!strcmp(argv[i], "--bind") && i + 1 < argc) {
      bind = argv[++i];
    } else if (!strcmp(argv[i], "--open")) {
      open_browser = 1;
    } else if (argv[i][0] == '-' || dir) {
      lumen_cli_error(cmd, "unexpected '%s' (see 'lumen view --help')", argv[i]);
      return LUMEN_EXIT_USAGE;
    } else {
      dir = argv[i];
    }
  }
  if (!dir) {
    lumen_cli_error(cmd, "the output folder of a lumen dce run is required (see 'lumen view --help')");
    return LUMEN_EXIT_USAGE;
  }
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_ctx_set_log(ctx, NULL, NULL, LUMEN_LOG_ERROR); /* a refused request is answered to its client, not printed */
  view_run *run = calloc(1, sizeof *run);
  if (!run || view_open(ctx, dir, run) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", run ? lumen_ctx_last_error(ctx) : "out of memory");
    if (run) view_close(run);
    free(run);
    lumen_ctx_destroy(ctx);
    return LUMEN_EXIT_FAILURE;
  }
  /* the server's threads start with SIGINT and SIGTERM blocked: this thread waits for them */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);
  char why[256];
  int bound = 0;
  view_server *s = view_server_start(run, bind, port, &bound, why, sizeof why);
  int rc = LUMEN_EXIT_OK;
  if (!s) {
    lumen_cli_error(cmd, "%s", why);
    rc = LUMEN_EXIT_FAILURE;
  } else {
    const int v6 = strchr(bind, ':') != NULL;
    char url[128];
    snprintf(url, sizeof url, "http://%s%s%s:%d/", v6 ? "[" : "", bind, v6 ? "]" : "", bound);
    printf("lumen view: %s (%s, %lld x %lld x %lld, %d maps); Ctrl-C stops\n", url, run->prefix, (long long)run->nx,
           (long long)run->ny, (long long)run->nz, run->n_maps);
    if (strcmp(bind, "127.0.0.1") && strcmp(bind, "::1"))
      fprintf(stderr, "lumen view: warning: listening on %s: other machines can read this run's maps\n", bind);
    fflush(stdout);
    if (open_browser && fork() == 0) {
      execlp("xdg-open", "xdg-open", url, (char *)NULL);
      _exit(127);
    }
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "lumen view: stopped (%s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    view_server_stop(s);
  }
  view_close(run);
  free(run);
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cmd_view(int argc, char **argv) {
  (void)argc;
  if (argv[1] && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    help(stdout);
    return lumen_cli_finish_stdout(cmd);
  }
  lumen_cli_error(cmd, "this lumen was built without libmicrohttpd (libmicrohttpd-dev): the viewer is not available");
  return LUMEN_EXIT_FAILURE;
}
#endif
