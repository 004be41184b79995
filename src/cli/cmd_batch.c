/* lumen batch: dce, t1, filter or segment over a list file or a BIDS dataset, into a BIDS
   derivatives folder (docs/SCALE.md). Each item runs as a child `lumen` process (a crash or a
   corrupt input fails that item only), from a shared queue of --jobs workers, admitted under
   --memory-limit; items whose logged outputs still match their checksums are skipped (resume).
   Under mpirun the ranks split the items and rank 0 prints the summary. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "lumen/device.h"
#include "scale/scale.h"
#include "lumen/io.h"
#include "lumen/pipeline.h"

extern char **environ;

enum { ST_TODO = 0, ST_OK, ST_FAILED, ST_SKIPPED };

typedef struct item_res {
  int32_t status, exit_code, owner, pad;
  double seconds;
  char note[200];
} item_res;

typedef struct batch {
  const char *command, *out, *exe;
  int extra_argc;
  char **extra;            /* after "--" */
  lumen_dist_subjects subs;
  item_res *res;
  int resume, quiet, rank, size;
  int shard_k, shard_n;    /* --shard K/N: items i with i % (N * size) == K * size + rank */
  int64_t mem_limit, mem_in_flight;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char **env;              /* environment for the children (no MPI variables) */
} batch;

static int mkdir_p(const char *dir) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* An image's name without its format's suffix (the io table, lumen_image_format_of_name), and the
   suffix its output keeps: its own when lumen writes that format, else (DICOM) ".nii.gz". */
static void split_ext(const char *path, char *stem, size_t n, const char **out_ext) {
  const char *b = base_name(path);
  lumen_format_info f;
  lumen_image_format_of_name(b, &f);
  size_t lb = strlen(b), le = (size_t)f.suffix_length;
  snprintf(stem, n, "%s", b);
  *out_ext = "";
  if (le && lb > le) {
    stem[lb - le < n ? lb - le : n - 1] = 0;
    *out_ext = f.can_write ? b + lb - le : ".nii.gz";
  }
}

static int in_shard(const batch *b, int i) { return i % b->shard_n == b->shard_k; }
static int mine(const batch *b, int i) { return in_shard(b, i) && (i / b->shard_n) % b->size == b->rank; }
static int owner(const batch *b, int i) { return (i / b->shard_n) % b->size; }

static int per_image(const batch *b) { return !strcmp(b->command, "filter") || !strcmp(b->command, "segment"); }

/* output folder and the key (log name stem) of item i */
static void item_paths(const batch *b, int i, char *dir, size_t nd, char *key, size_t nk) {
  const lumen_dist_subject *s = &b->subs.items[i];
  if (s->session[0]) snprintf(dir, nd, "%s/%s/%s", b->out, s->id, s->session);
  else snprintf(dir, nd, "%s/%s", b->out, s->id);
  if (per_image(b) && s->argc > 0) {
    const char *ext;
    split_ext(s->argv[0], key, nk, &ext);
  } else if (s->session[0]) {
    snprintf(key, nk, "%s_%s", s->id, s->session);
  } else {
    snprintf(key, nk, "%s", s->id);
  }
}

/* Two items whose outputs would share one name (a folder holding x.dcm and x.nii.gz, or anat/x.nii
   and func/x.nii, or two *_dce files of one session): refused before anything is made, naming
   both, since one result would silently replace the other and a rerun would skip both. */
typedef struct item_key {
  char *path; /* OUT/ID[/SESSION]/KEY, owned */
  int i;
} item_key;

static int cmp_item_key(const void *a, const void *b) {
  const item_key *x = a, *y = b;
  int c = strcmp(x->path, y->path);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int outputs_collide(const batch *b) {
  const int n = b->subs.n;
  if (n < 2) return 0;
  item_key *k = malloc(sizeof *k * (size_t)n);
  if (!k) {
    lumen_cli_error("batch", "out of memory");
    return 1;
  }
  int bad = 0, made = 0;
  for (; made < n && !bad; ++made) {
    char dir[PATH_MAX], key[256];
    item_paths(b, made, dir, sizeof dir, key, sizeof key);
    size_t len = strlen(dir) + strlen(key) + 2;
    k[made].path = malloc(len);
    k[made].i = made;
    if (!k[made].path) {
      lumen_cli_error("batch", "out of memory");
      bad = 1;
    } else {
      snprintf(k[made].path, len, "%s/%s", dir, key);
    }
  }
  if (!bad) qsort(k, (size_t)n, sizeof *k, cmp_item_key);
  for (int j = 1; j < n && !bad; ++j) {
    if (strcmp(k[j - 1].path, k[j].path)) continue;
    const lumen_dist_subject *x = &b->subs.items[k[j - 1].i], *y = &b->subs.items[k[j].i];
    lumen_cli_error("batch",
                    "items %d ('%s') and %d ('%s') would write the same outputs %s*: one result would replace the "
                    "other; rename one of the inputs (or give them distinct IDs in a --list)",
                    k[j - 1].i + 1, x->argc ? x->argv[x->argc > 1 ? 1 : 0] : x->id, k[j].i + 1,
                    y->argc ? y->argv[y->argc > 1 ? 1 : 0] : y->id, k[j].path);
    bad = 1;
  }
  for (int j = 0; j < made; ++j) free(k[j].path);
  free(k);
  return bad;
}

/* files of dir that are outputs (not the batch's own logs) */
static int list_outputs(const char *dir, const char *only, char names[][256], int max) {
  if (only) { snprintf(names[0], 256, "%.255s", only); return 1; }
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    if (e->d_name[0] == '.' || strstr(e->d_name, "_batch.json") || strstr(e->d_name, "_batch.log")) continue;
    char p[PATH_MAX + 300];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

/* 1 when DIR/KEY_batch.json says ok and every listed output still has its checksum */
/* The run's arguments after the program's path, one string (the item log's "run_arguments"):
   a rerun with other inputs or options is not "complete" however intact the old outputs are. */
static char *joined_arguments(char *const *argv) {
  size_t len = 1;
  for (int a = 1; argv[a]; ++a) len += strlen(argv[a]) + 1;
  char *out = malloc(len), *p = out;
  if (!out) return NULL;
  *p = '\0';
  for (int a = 1; argv[a]; ++a) {
    size_t k = strlen(argv[a]);
    if (a > 1) *p++ = '\n'; /* a separator no argument of a list item holds */
    memcpy(p, argv[a], k + 1);
    p += k;
  }
  return out;
}

static int complete(lumen_ctx *ctx, const char *dir, const char *key, const batch *b, char *const *argv) {
  char p[PATH_MAX + 300];
  snprintf(p, sizeof p, "%s/%s_batch.json", dir, key);
  lumen_json *j = NULL;
  if (access(p, R_OK) != 0 || lumen_json_read(ctx, p, &j) != LUMEN_OK) return 0;
  char *status = NULL, *cmd = NULL, *alg = NULL, *args = NULL, *want_args = joined_arguments(argv);
  int found = 0, ok = 1, nout = 0;
  lumen_json_get_string(ctx, j, "status", &status, &found);
  lumen_json_get_string(ctx, j, "run_arguments", &args, NULL);
  if (!args || !want_args || strcmp(args, want_args)) ok = 0; /* other inputs or options: run again */
  lumen_json_get_string(ctx, j, "command", &cmd, NULL);
  lumen_json_get_string(ctx, j, "checksum_algorithm", &alg, NULL);
  if (!status || strcmp(status, "ok") || !cmd || strcmp(cmd, b->command)) ok = 0;
  if (!alg || strncmp(alg, "XXH3 64-bit", 11)) ok = 0;  /* a log of the former FNV-1a checksums: redo */
  for (int64_t k = 0; ok && k < lumen_json_count(j); ++k) {
    const char *name = lumen_json_key(j, k);
    if (strncmp(name, "output:", 7)) continue;
    char *want = NULL, hex[17];
    lumen_json_get_string(ctx, j, name, &want, NULL);
    snprintf(p, sizeof p, "%s/%s", dir, name + 7);
    if (!want || lumen_pipe_checksum_file(ctx, p, hex) != LUMEN_OK || strcmp(hex, want)) ok = 0;
    free(want);
    ++nout;
  }
  free(status);
  free(cmd);
  free(alg);
  free(args);
  free(want_args);
  lumen_json_free(j);
  return ok && nout > 0;
}

static int write_item_log(lumen_ctx *ctx, const batch *b, const char *dir, const char *key, const char *only,
                          char *const *argv, double seconds) {
  static char names[512][256];  /* guarded by the caller's lock */
  int n = list_outputs(dir, only, names, 512);
  lumen_json *j = NULL;
  if (lumen_json_create(ctx, &j) != LUMEN_OK) return 0;
  lumen_json_set_string(ctx, j, "command", b->command);
  lumen_json_set_string(ctx, j, "status", "ok");
  lumen_json_set_number(ctx, j, "seconds", seconds);
  int na = 0;
  while (argv[na]) ++na;
  lumen_json_set_strings(ctx, j, "arguments", (const char *const *)argv, na);
  char *joined = joined_arguments(argv);
  if (!joined) {
    lumen_json_free(j);
    return 0;
  }
  lumen_json_set_string(ctx, j, "run_arguments", joined);
  free(joined);
  lumen_json_set_string(ctx, j, "checksum_algorithm", "XXH3 64-bit (xxHash) over the file bytes (as the run logs)");
  int ok = 1;
  for (int i = 0; i < n; ++i) {
    char p[PATH_MAX + 300], hex[17], k2[300];
    snprintf(p, sizeof p, "%.4095s/%.255s", dir, names[i]);
    if (lumen_pipe_checksum_file(ctx, p, hex) != LUMEN_OK) { ok = 0; continue; }
    snprintf(k2, sizeof k2, "output:%.255s", names[i]);
    lumen_json_set_string(ctx, j, k2, hex);
  }
  char p[PATH_MAX + 300];
  snprintf(p, sizeof p, "%s/%s_batch.json", dir, key);
  if (lumen_json_write(ctx, j, p, 1) != LUMEN_OK) ok = 0;
  lumen_json_free(j);
  return ok;
}

static int64_t file_size(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

/* memory estimate of one item: the inputs' sizes, x8 for gzip-compressed NIfTI and the float
   working copies (a rough bound; docs/SCALE.md) */
static int64_t item_bytes(const lumen_dist_subject *s) {
  int64_t t = 0;
  for (int a = 0; a < s->argc; ++a) {
    int64_t z = file_size(s->argv[a]);
    size_t l = strlen(s->argv[a]);
    t += (l > 3 && !strcmp(s->argv[a] + l - 3, ".gz")) ? 8 * z : 3 * z;
  }
  return t;
}

/* One item on its way through the stages: reader (resume check, inputs read ahead) ->
   compute (a child lumen) -> writer (checksums of the outputs, the item's log). */
typedef struct job {
  int i;
  int64_t need;
  char dir[PATH_MAX], key[256], outname[300], outpath[PATH_MAX + 300], logp[PATH_MAX + 300];
  char *argv[LUMEN_DIST_MAX_ARGS + 80];
  int spawn_rc, wst;
} job;

typedef struct stages {
  batch *b;
  lumen_dist_queue *q_in, *q_out;
  double read_s, write_s, compute_s;   /* busy seconds of each stage (compute: summed over jobs) */
} stages;

static int is_regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* reads every input file once (decompression happens in the child; this brings the bytes from
   a slow or network file system into the page cache while the previous item computes) */
static void read_ahead(const lumen_dist_subject *s) {
  static char buf[1 << 16];  /* the reader thread's own */
  for (int a = 0; a < s->argc; ++a) {
    /* only regular files: reading a FIFO would block this thread and steal the job's data */
    if (s->argv[a][0] == '-' || !is_regular_file(s->argv[a])) continue;
    FILE *f = fopen(s->argv[a], "rb");
    if (!f) continue;
    while (fread(buf, 1, sizeof buf, f) == sizeof buf) {}
    fclose(f);
  }
}

static int has_arg(char *const *argv, int argc, const char *want) {
  for (int a = 0; a < argc; ++a)
    if (!strcmp(argv[a], want)) return 1;
  return 0;
}

static void build_argv(const batch *b, const lumen_dist_subject *s, job *j) {
  int n = 0;
  char **argv = j->argv;
  argv[n++] = (char *)b->exe;
  argv[n++] = (char *)b->command;
  if (per_image(b)) {
    int e0 = 0;
    if (b->extra_argc) argv[n++] = b->extra[e0++];
    argv[n++] = s->argc ? s->argv[0] : (char *)"";
    argv[n++] = j->outpath;
    for (int a = 1; a < s->argc; ++a) argv[n++] = s->argv[a];
    for (int a = e0; a < b->extra_argc && n < LUMEN_DIST_MAX_ARGS + 76; ++a) argv[n++] = b->extra[a];
  } else {
    for (int a = 0; a < s->argc; ++a) argv[n++] = s->argv[a];
    argv[n++] = (char *)"--out";
    argv[n++] = j->dir;
    /* outputs are named after the item (ID[_SESSION]), not the input file, unless the item or
       the shared options choose a --prefix */
    if (!has_arg(s->argv, s->argc, "--prefix") && !has_arg(b->extra, b->extra_argc, "--prefix")) {
      argv[n++] = (char *)"--prefix";
      argv[n++] = j->key;
    }
    for (int a = 0; a < b->extra_argc && n < LUMEN_DIST_MAX_ARGS + 76; ++a) argv[n++] = b->extra[a];
    argv[n++] = (char *)"-q";
  }
  argv[n++] = (char *)"--overwrite";  /* outputs of an unfinished earlier attempt are replaced */
  argv[n] = NULL;
}

static void *reader_main(void *user) {
  stages *sg = user;
  batch *b = sg->b;
  lumen_ctx *ctx = NULL;
  lumen_ctx_create(&ctx);
  for (int i = 0; i < b->subs.n; ++i) {
    if (!mine(b, i)) continue;
    double t0 = lumen_cli_now();
    item_res *r = &b->res[i];
    r->owner = b->rank;
    const lumen_dist_subject *s = &b->subs.items[i];
    job *j = calloc(1, sizeof *j);
    if (!j || !ctx) { r->status = ST_FAILED; snprintf(r->note, sizeof r->note, "out of memory"); free(j); continue; }
    j->i = i;
    item_paths(b, i, j->dir, sizeof j->dir, j->key, sizeof j->key);
    if (mkdir_p(j->dir) != 0) {
      r->status = ST_FAILED;
      snprintf(r->note, sizeof r->note, "cannot create %.100s: %.60s", j->dir, strerror(errno));
      free(j);
      continue;
    }
    if (per_image(b)) {
      const char *ext;
      char stem[256];
      split_ext(s->argc ? s->argv[0] : "x", stem, sizeof stem, &ext);
      /* outputs keep PNG and NIfTI; DICOM inputs (lumen writes no DICOM) and others give .nii.gz */
      snprintf(j->outname, sizeof j->outname, "%s_desc-%s%s", stem, b->extra_argc ? b->extra[0] : b->command,
               ext[0] ? ext : ".nii.gz");
      snprintf(j->outpath, sizeof j->outpath, "%s/%s", j->dir, j->outname);
    }
    snprintf(j->logp, sizeof j->logp, "%s/%s_batch.log", j->dir, j->key);
    build_argv(b, s, j);
    if (b->resume && complete(ctx, j->dir, j->key, b, j->argv)) {
      r->status = ST_SKIPPED;
      snprintf(r->note, sizeof r->note, "outputs complete (checksums match, same arguments): skipped");
      free(j);
      sg->read_s += lumen_cli_now() - t0;
      continue;
    }
    j->need = item_bytes(s);
    read_ahead(s);
    sg->read_s += lumen_cli_now() - t0;
    /* bounded: at most 2 items read ahead, and their estimate within --memory-limit */
    lumen_dist_queue_push(sg->q_in, j, j->need);
  }
  lumen_dist_queue_close(sg->q_in);
  lumen_ctx_destroy(ctx);
  return NULL;
}

static lumen_status compute_worker(void *user, int worker, int64_t unused) {
  (void)worker; (void)unused;
  stages *sg = user;
  batch *b = sg->b;
  job *j;
  while ((j = lumen_dist_queue_pop(sg->q_in, NULL))) {
    /* admission under the memory limit: at least one item always runs */
    pthread_mutex_lock(&b->mu);
    while (b->mem_limit > 0 && b->mem_in_flight > 0 && b->mem_in_flight + j->need > b->mem_limit)
      pthread_cond_wait(&b->cv, &b->mu);
    b->mem_in_flight += j->need;
    pthread_mutex_unlock(&b->mu);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, j->logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    double t0 = lumen_cli_now();
    j->spawn_rc = posix_spawn(&pid, b->exe, &fa, NULL, j->argv, b->env);
    posix_spawn_file_actions_destroy(&fa);
    if (j->spawn_rc == 0)
      while (waitpid(pid, &j->wst, 0) < 0 && errno == EINTR) {}
    double dt = lumen_cli_now() - t0;
    pthread_mutex_lock(&b->mu);
    b->res[j->i].seconds = dt;
    sg->compute_s += dt;
    b->mem_in_flight -= j->need;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    lumen_dist_queue_push(sg->q_out, j, 0);
  }
  return LUMEN_OK;
}

static void *writer_main(void *user) {
  stages *sg = user;
  batch *b = sg->b;
  lumen_ctx *ctx = NULL;
  lumen_ctx_create(&ctx);
  job *j;
  while ((j = lumen_dist_queue_pop(sg->q_out, NULL))) {
    double t0 = lumen_cli_now();
    item_res *r = &b->res[j->i];
    int wst = j->wst;
    if (j->spawn_rc != 0) {
      r->status = ST_FAILED;
      snprintf(r->note, sizeof r->note, "cannot start %.100s: %.60s", b->exe, strerror(j->spawn_rc));
    } else if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) {
      r->status = ctx && write_item_log(ctx, b, j->dir, j->key, per_image(b) ? j->outname : NULL, j->argv, r->seconds)
                      ? ST_OK : ST_FAILED;
      if (r->status == ST_FAILED) snprintf(r->note, sizeof r->note, "the outputs could not be checksummed");
    } else {
      r->status = ST_FAILED;
      r->exit_code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
      /* the last error line of the child's log */
      FILE *f = fopen(j->logp, "r");
      char line[1024], last[1024] = "";
      while (f && fgets(line, sizeof line, f))
        if (strstr(line, "lumen ") && !strstr(line, "warning")) snprintf(last, sizeof last, "%s", line);
      if (f) fclose(f);
      last[strcspn(last, "\n")] = 0;
      if (WIFSIGNALED(wst)) snprintf(r->note, sizeof r->note, "killed by signal %d (log %.100s_batch.log)", WTERMSIG(wst), j->key);
      else snprintf(r->note, sizeof r->note, "exit %d: %.170s", r->exit_code, last[0] ? last : "see the log");
    }
    sg->write_s += lumen_cli_now() - t0;
    free(j);
  }
  lumen_ctx_destroy(ctx);
  return NULL;
}

/* reader thread -> jobs compute workers (shared queue) -> writer thread */
static void run_stages(lumen_ctx *ctx, batch *b, int jobs, stages *sg) {
  sg->b = b;
  if (lumen_dist_queue_create(ctx, 2, b->mem_limit, &sg->q_in) != LUMEN_OK ||
      lumen_dist_queue_create(ctx, INT64_MAX, 0, &sg->q_out) != LUMEN_OK) {
    lumen_dist_queue_free(sg->q_in);
    return;
  }
  pthread_t rd, wr;
  int have_rd = pthread_create(&rd, NULL, reader_main, sg) == 0;
  if (!have_rd) reader_main(sg);  /* no thread: read everything first */
  int have_wr = pthread_create(&wr, NULL, writer_main, sg) == 0;
  lumen_dist_pool_run(ctx, jobs, jobs, compute_worker, sg);
  lumen_dist_queue_close(sg->q_out);
  if (have_rd) pthread_join(rd, NULL);
  if (have_wr) pthread_join(wr, NULL);
  else writer_main(sg);
  lumen_dist_queue_free(sg->q_in);
  lumen_dist_queue_free(sg->q_out);
}

static int write_description(lumen_ctx *ctx, const batch *b, const char *source) {
  lumen_json *j = NULL;
  if (lumen_json_create(ctx, &j) != LUMEN_OK) return 0;
  char name[128], gen[512];
  snprintf(name, sizeof name, "lumen %s", b->command);
  lumen_json_set_string(ctx, j, "Name", name);
  lumen_json_set_string(ctx, j, "BIDSVersion", "1.9.0");
  lumen_json_set_string(ctx, j, "DatasetType", "derivative");
  snprintf(gen, sizeof gen, "[{\"Name\": \"lumen\", \"Version\": \"%s\", \"Description\": \"lumen batch %s\"}]",
           LUMEN_VERSION_STRING, b->command);
  lumen_json_set_text(ctx, j, "GeneratedBy", gen);
  if (source) {
    char abs[PATH_MAX], txt[PATH_MAX + 64];
    if (!realpath(source, abs)) snprintf(abs, sizeof abs, "%s", source);
    snprintf(txt, sizeof txt, "[{\"URL\": \"file://%s\"}]", abs);
    lumen_json_set_text(ctx, j, "SourceDatasets", txt);
  }
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/dataset_description.json", b->out);
  int ok = lumen_json_write(ctx, j, p, 1) == LUMEN_OK;
  lumen_json_free(j);
  return ok;
}

static void help(FILE *out) {
  fprintf(out,
    "usage: lumen batch dce|t1|filter|segment (--list FILE | --bids DIR) --out DERIV\n"
    "                   [--jobs N] [--memory-limit SIZE] [--shard K/N] [--no-resume] [-q]\n"
    "                   [-- COMMAND OPTIONS...]\n\n"
    "Runs one command over many subjects and writes a BIDS derivatives folder DERIV\n"
    "(dataset_description.json, DERIV/sub-X[/ses-Y]/ outputs, a per-item KEY_batch.json with the\n"
    "outputs' checksums and KEY_batch.log with the command's messages, batch_summary.tsv).\n"
    "  --list FILE         one item per line: 'ID ARG...' (the command's input options, e.g.\n"
    "                      'sub-01 --dce a.nii.gz --t1map t1.nii.gz'; filter/segment: 'ID IMAGE')\n"
    "  --bids DIR          items from sub-*/[ses-*/]<folder>/: dce: *_dce.nii[.gz] (+ *_T1map,\n"
    "                      alias *_T1w-map, and *_mask of the session); t1: *_VFA / *_flip-*\n"
    "                      series; filter/segment: every .png/.nii/.nii.gz/.dcm image (outputs\n"
    "                      NAME_desc-OP.EXT; .nii.gz for a .dcm)\n"
    "dce/t1 outputs are named after the item: DERIV/ID[/SES]/ID[_SES]_model-..., unless the\n"
    "options give --prefix.\n"
    "  -- OPTIONS          passed to every run (filter/segment: the OP or ALGO first)\n"
    "  --jobs N            items at a time from one shared queue (default 1); each runs as a child\n"
    "                      process, so one item's reading and writing overlap another's compute\n"
    "  --memory-limit SIZE items are admitted while their estimated memory (inputs x3, gzip x8)\n"
    "                      fits (e.g. 4G); one item always runs\n"
    "  --shard K/N         only items i with i mod N = K (job arrays: N jobs share one DERIV;\n"
    "                      each writes batch_summary_shard-K-of-N.tsv)\n"
    "  --no-resume         redo items whose outputs are complete (default: skip them)\n"
    "A failing item is reported and the others go on; the exit status is 1 when any failed.\n"
    "Under 'mpirun -np N' the ranks split the items; rank 0 writes the summary.\n"
    "This build: MPI %s.\n\n", lumen_dist_have_mpi() ? "on" : "off (rebuild with libopenmpi-dev)");
  lumen_cli_help_exit_status(out);
}

/* --jobs N: an integer 1..1024, all of it ("2x" is refused) */
static int parse_jobs(const char *v, int *jobs) {
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (end == v || *end || errno == ERANGE || n < 1 || n > 1024) return 0;
  *jobs = (int)n;
  return 1;
}

static int takes_value(const char *a) {
  static const char *const names[] = {"--list", "--bids", "--out", "--jobs", "--memory-limit", "--shard"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k)
    if (!strcmp(a, names[k])) return 1;
  return 0;
}

/* One option with its value into b (and *list, *bids, *jobs): LUMEN_EXIT_OK, or LUMEN_EXIT_USAGE
   with the message printed. */
static int batch_option(batch *b, const char *a, const char *v, const char **list, const char **bids, int *jobs) {
  const char *cmd = "batch";
  if (!strcmp(a, "--list")) *list = v;
  else if (!strcmp(a, "--bids")) *bids = v;
  else if (!strcmp(a, "--out")) b->out = v;
  else if (!strcmp(a, "--jobs")) {
    if (!parse_jobs(v, jobs)) { lumen_cli_error(cmd, "--jobs: '%s' is not 1..1024", v); return LUMEN_EXIT_USAGE; }
  } else if (!strcmp(a, "--memory-limit")) {
    b->mem_limit = lumen_cli_parse_size(v);
    if (b->mem_limit <= 0) { lumen_cli_error(cmd, "--memory-limit: '%s' is not a size (e.g. 512M, 4G)", v); return LUMEN_EXIT_USAGE; }
  } else {  /* --shard */
    lumen_ctx *c2 = lumen_cli_context(cmd, 0);
    lumen_status pst = c2 ? lumen_dist_shard_parse(c2, v, &b->shard_k, &b->shard_n) : LUMEN_ERR_OUT_OF_MEMORY;
    if (pst != LUMEN_OK) lumen_cli_error(cmd, "--shard: %s", c2 ? lumen_ctx_last_error(c2) : "out of memory");
    lumen_ctx_destroy(c2);
    if (pst != LUMEN_OK) return LUMEN_EXIT_USAGE;
  }
  return LUMEN_EXIT_OK;
}

/* filter/segment: the OP or ALGO and the options after "--" are checked as the command would
   check them, before any item runs or anything is written (a typo in the op would otherwise fail
   every item with exit 1). dce/t1 options are checked by each item's run. */
static int check_command_options(const batch *b) {
  if (!per_image(b)) return LUMEN_EXIT_OK;
  char **argv = calloc((size_t)b->extra_argc + 2, sizeof *argv);
  if (!argv) { lumen_cli_error("batch", "out of memory"); return LUMEN_EXIT_FAILURE; }
  argv[0] = (char *)b->command;
  for (int a = 0; a < b->extra_argc; ++a) argv[a + 1] = b->extra[a];
  int rc = !strcmp(b->command, "filter") ? lumen_cmd_filter_check(b->extra_argc + 1, argv)
                                          : lumen_cmd_segment_check(b->extra_argc + 1, argv);
  free(argv);
  return rc;
}

/* The command line, before anything is read: LUMEN_EXIT_OK, or the exit status (message printed;
   -1: --help was printed). */
static int batch_args(batch *b, int argc, char **argv, const char **list, const char **bids, int *jobs) {
  const char *cmd = "batch";
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { help(stdout); return -1; }
    if (!strcmp(a, "--")) { b->extra = argv + i + 1; b->extra_argc = argc - i - 1; break; }
    if (!strcmp(a, "-q")) { b->quiet = 1; continue; }
    if (!strcmp(a, "--no-resume")) { b->resume = 0; continue; }
    if (!strcmp(a, "--resume")) { b->resume = 1; continue; }
    if (a[0] != '-') {
      if (b->command) {
        lumen_cli_error(cmd, "unexpected argument '%s' (see 'lumen batch --help')", a);
        return LUMEN_EXIT_USAGE;
      }
      b->command = a;
      continue;
    }
    if (!takes_value(a)) {
      lumen_cli_error(cmd, "unknown option '%s' (see 'lumen batch --help')", a);
      return LUMEN_EXIT_USAGE;
    }
    if (i + 1 >= argc) { lumen_cli_error(cmd, "%s needs a value (see 'lumen batch --help')", a); return LUMEN_EXIT_USAGE; }
    int rc = batch_option(b, a, argv[++i], list, bids, jobs);
    if (rc != LUMEN_EXIT_OK) return rc;
  }
  if (!b->command) {
    lumen_cli_error(cmd, "give the command to run: dce, t1, filter or segment (see 'lumen batch --help')");
    return LUMEN_EXIT_USAGE;
  }
  if (strcmp(b->command, "dce") && strcmp(b->command, "t1") && !per_image(b)) {
    lumen_cli_error(cmd, "unknown command '%s', expected dce, t1, filter or segment (see 'lumen batch --help')",
                    b->command);
    return LUMEN_EXIT_USAGE;
  }
  if (!b->out || (!*list == !*bids)) {
    lumen_cli_error(cmd, "--out DERIV and one of --list FILE / --bids DIR are required");
    return LUMEN_EXIT_USAGE;
  }
  if (per_image(b) && b->extra_argc == 0) {
    lumen_cli_error(cmd, "%s needs its OP/ALGO after '--' (e.g. 'lumen batch filter ... -- gaussian --sigma 2')",
                    b->command);
    return LUMEN_EXIT_USAGE;
  }
  return check_command_options(b);
}

/* The children's environment: ours without the MPI launcher's variables; and one GPU per rank:
   under MPI on a node with several GPUs, the rank's children see only GPU (node-local rank mod
   count), unless the user chose with CUDA_VISIBLE_DEVICES. 0, or -1 when out of memory. */
static int child_environment(batch *b) {
  int ne = 0;
  while (environ[ne]) ++ne;
  b->env = calloc((size_t)ne + 2, sizeof *b->env);
  if (!b->env) return -1;
  int kenv = 0;
  for (int i = 0; i < ne; ++i)
    if (strncmp(environ[i], "OMPI_", 5) && strncmp(environ[i], "PMIX_", 5) && strncmp(environ[i], "PMI_", 4)) b->env[kenv++] = environ[i];
  static char visible[48];
  if (b->size > 1 && !getenv("CUDA_VISIBLE_DEVICES")) {
    int ncuda = 0;
    if (lumen_cuda_probe(NULL, &ncuda, NULL, 0) != LUMEN_OK) ncuda = 0;
    int dev = lumen_dist_rank_device(lumen_dist_local_rank(b->rank), ncuda, NULL);
    if (dev >= 0) {
      snprintf(visible, sizeof visible, "CUDA_VISIBLE_DEVICES=%d", dev);
      b->env[kenv++] = visible;
    }
  }
  return 0;
}

/* Rank 0, all items run: the table of items on stdout (with -q only the failed ones), the
   summary TSV in --out and the totals line; LUMEN_EXIT_FAILURE when an item failed. */
static int report_items(const batch *b, int jobs, double wall, const stages *sg) {
  const int n = b->subs.n;
  int nok = 0, nfail = 0, nskip = 0;
  char p[PATH_MAX + 64];
  if (b->shard_n > 1) snprintf(p, sizeof p, "%s/batch_summary_shard-%d-of-%d.tsv", b->out, b->shard_k, b->shard_n);
  else snprintf(p, sizeof p, "%s/batch_summary.tsv", b->out);
  FILE *tsv = fopen(p, "w");
  if (tsv) fprintf(tsv, "item\tsubject\tsession\tstatus\tseconds\tnote\n");
  if (!b->quiet) printf("%-28s %-10s %-8s %8s  %s\n", "item", "session", "status", "seconds", "note");
  for (int i = 0; i < n; ++i) {
    const item_res *r = &b->res[i];
    if (!in_shard(b, i)) continue;
    const char *sname = r->status == ST_OK ? "ok" : r->status == ST_SKIPPED ? "skipped" : "FAILED";
    char dir[PATH_MAX], key[256];
    item_paths(b, i, dir, sizeof dir, key, sizeof key);
    nok += r->status == ST_OK;
    nskip += r->status == ST_SKIPPED;
    nfail += r->status != ST_OK && r->status != ST_SKIPPED;
    if (!b->quiet || r->status == ST_FAILED)
      printf("%-28s %-10s %-8s %8.2f  %s\n", key, b->subs.items[i].session[0] ? b->subs.items[i].session : "-", sname,
             r->seconds, r->status == ST_TODO ? "not run" : r->note);
    if (tsv) fprintf(tsv, "%s\t%s\t%s\t%s\t%.3f\t%s\n", key, b->subs.items[i].id, b->subs.items[i].session, sname, r->seconds, r->note);
  }
  if (tsv) fclose(tsv);
  if (!b->quiet || nfail)
    printf("lumen batch: %d ok, %d skipped (complete), %d failed, of %d; %.2f s (rank 0 stages: read %.2f s, "
           "compute %.2f s over %d job%s, write %.2f s); summary %s\n", nok, nskip, nfail, n, wall, sg->read_s,
           sg->compute_s, jobs, jobs == 1 ? "" : "s", sg->write_s, p);
  return nfail ? LUMEN_EXIT_FAILURE : LUMEN_EXIT_OK;
}

int lumen_cmd_batch(int argc, char **argv) {
  const char *cmd = "batch", *list = NULL, *bids = NULL;
  batch b;
  memset(&b, 0, sizeof b);
  int jobs = 1;
  b.resume = 1;
  b.size = 1;
  b.shard_n = 1;
  int arc = batch_args(&b, argc, argv, &list, &bids, &jobs);
  if (arc < 0) return LUMEN_EXIT_OK;
  if (arc != LUMEN_EXIT_OK) return arc;
  static char exe[PATH_MAX];
  ssize_t ne = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (ne <= 0) { lumen_cli_error(cmd, "cannot find the lumen executable (/proc/self/exe)"); return LUMEN_EXIT_FAILURE; }
  exe[ne] = 0;
  b.exe = exe;
  if (lumen_dist_mpi_init(&argc, &argv, &b.rank, &b.size) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_dist_mpi_error());
    return LUMEN_EXIT_FAILURE;
  }
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  lumen_status st = !ctx ? LUMEN_ERR_OUT_OF_MEMORY
                   : list ? lumen_dist_list_read(ctx, list, &b.subs) : lumen_dist_bids_scan(ctx, bids, b.command, &b.subs);
  if (st == LUMEN_OK && outputs_collide(&b)) {
    lumen_dist_subjects_clear(&b.subs);
    lumen_ctx_destroy(ctx);
    lumen_dist_mpi_finalize();
    return LUMEN_EXIT_USAGE; /* nothing made */
  }
  if (st != LUMEN_OK) {
    if (b.rank == 0) lumen_cli_error(cmd, "%s", ctx ? lumen_ctx_last_error(ctx) : "out of memory");
    lumen_ctx_destroy(ctx);
    lumen_dist_mpi_finalize();
    return LUMEN_EXIT_FAILURE; /* the list or dataset is missing, unreadable or malformed */
  }
  int n = b.subs.n, rc = LUMEN_EXIT_OK;
  b.res = calloc((size_t)n, sizeof *b.res);
  if (!b.res || child_environment(&b)) { lumen_cli_error(cmd, "out of memory"); rc = LUMEN_EXIT_FAILURE; goto done; }
  if (b.rank == 0 && (mkdir_p(b.out) != 0 || !write_description(ctx, &b, bids))) {
    lumen_cli_error(cmd, "cannot write %s/dataset_description.json", b.out);
    rc = LUMEN_EXIT_FAILURE;
  }
  lumen_dist_mpi_barrier();
  pthread_mutex_init(&b.mu, NULL);
  pthread_cond_init(&b.cv, NULL);
  double t0 = lumen_cli_now();
  stages sg;
  memset(&sg, 0, sizeof sg);
  if (rc == LUMEN_EXIT_OK) {
    if (!b.quiet && b.rank == 0)
      fprintf(stderr, "lumen batch: %d item%s of '%s', %d job%s%s\n", n, n == 1 ? "" : "s", b.command, jobs,
              jobs == 1 ? "" : "s", b.size > 1 ? " per MPI rank" : "");
    run_stages(ctx, &b, jobs, &sg);
  }
  double wall = lumen_cli_now() - t0;
  pthread_mutex_destroy(&b.mu);
  pthread_cond_destroy(&b.cv);
  /* rank 0 collects the results */
  if (b.size > 1) {
    item_res *all = b.rank == 0 ? calloc((size_t)n * (size_t)b.size, sizeof *all) : NULL;
    lumen_dist_mpi_gather(b.res, (int)(sizeof *b.res * (size_t)n), all);
    if (b.rank == 0 && all)
      for (int i = 0; i < n; ++i) b.res[i] = all[(size_t)owner(&b, i) * (size_t)n + (size_t)i];
    free(all);
  }
  if (b.rank == 0 && rc == LUMEN_EXIT_OK) rc = report_items(&b, jobs, wall, &sg);
  {
    int anyfail = lumen_dist_mpi_allsum(b.rank == 0 && rc != LUMEN_EXIT_OK);
    if (anyfail && rc == LUMEN_EXIT_OK) rc = LUMEN_EXIT_FAILURE;
  }
done:
  free(b.env);
  free(b.res);
  lumen_dist_subjects_clear(&b.subs);
  lumen_ctx_destroy(ctx);
  lumen_dist_mpi_finalize();
  return rc;
}
#else
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_batch, "batch")
#endif
