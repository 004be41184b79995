/* lumen view's HTTP server on libmicrohttpd (view_http.h). GET only; the paths are a fixed set (/,
   /api/info, /api/slice, /api/voxel, /api/roi, /api/roi.csv); every other path is 404, so nothing
   of the disk is reachable by a request, inside the output folder or out of it. The answers are
   built from what view_data.c read from the folder the user named. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "view/view_http.h"

struct view_server {
  struct MHD_Daemon *d;
  view_run *run;
};

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

static mhd_result reply(struct MHD_Connection *c, unsigned code, const char *type, const char *body, size_t n) {
  struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  /* the page's own script and style only: no other origin is contacted */
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
  if (!strncmp(type, "text/csv", 8)) MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"roi.csv\"");
  mhd_result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

static mhd_result error_reply(struct MHD_Connection *c, unsigned code, const char *msg) {
  pipe_sb b = {0};
  pipe_sb_printf(&b, "{\"error\": ");
  pipe_sb_json_str(&b, msg);
  pipe_sb_printf(&b, "}");
  mhd_result r = reply(c, code, "application/json", b.s ? b.s : "{}", b.s ? b.n : 2);
  pipe_sb_free(&b);
  return r;
}

/* An integer query argument in [lo, hi]; 0 when absent or not one. */
static int arg_int(struct MHD_Connection *c, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
  if (!v || !*v || strlen(v) > 18) return 0;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || *end || x < lo || x > hi) return 0;
  *out = x;
  return 1;
}

static mhd_result api(view_server *s, struct MHD_Connection *c, const char *url) {
  view_run *run = s->run;
  pipe_sb b = {0};
  lumen_status st = LUMEN_ERR_INVALID_ARGUMENT;
  int64_t x = 0, y = 0, z = 0, x1 = 0, y1 = 0;
  const int64_t big = (int64_t)1 << 40;
  const char *type = "application/json";
  if (!strcmp(url, "/api/info")) {
    st = view_info_json(run, &b);
  } else if (!strcmp(url, "/api/slice")) {
    const char *map = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "map");
    if (map && arg_int(c, "z", 0, big, &z)) st = view_slice_json(run, map, z, &b);
    else lumen_fail(run->ctx, st, "expected map=FILE&z=SLICE");
  } else if (!strcmp(url, "/api/voxel")) {
    if (arg_int(c, "x", 0, big, &x) && arg_int(c, "y", 0, big, &y) && arg_int(c, "z", 0, big, &z))
      st = view_voxel_json(run, x, y, z, &b);
    else lumen_fail(run->ctx, st, "expected x=&y=&z= (voxel indices)");
  } else if (!strcmp(url, "/api/roi") || !strcmp(url, "/api/roi.csv")) {
    const int csv = !strcmp(url, "/api/roi.csv");
    if (arg_int(c, "x0", 0, big, &x) && arg_int(c, "y0", 0, big, &y) && arg_int(c, "x1", 0, big, &x1) &&
        arg_int(c, "y1", 0, big, &y1) && arg_int(c, "z", 0, big, &z))
      st = view_roi(run, x, y, x1, y1, z, csv, &b);
    else lumen_fail(run->ctx, st, "expected x0=&y0=&x1=&y1=&z=");
    if (csv) type = "text/csv; charset=utf-8";
  } else {
    return error_reply(c, MHD_HTTP_NOT_FOUND, "not found");
  }
  mhd_result r;
  if (st == LUMEN_OK && b.s) {
    r = reply(c, MHD_HTTP_OK, type, b.s, b.n);
  } else {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(run->ctx));
    r = error_reply(c, st == LUMEN_ERR_OUT_OF_MEMORY ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_BAD_REQUEST, msg);
  }
  pipe_sb_free(&b);
  return r;
}

static mhd_result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                             const char *version, const char *upload, size_t *upload_size, void **state) {
  (void)version;
  (void)upload;
  view_server *s = cls;
  if (!*state) { /* the first call of a request: headers only */
    static int marker;
    *state = &marker;
    return MHD_YES;
  }
  if (*upload_size) { /* a body: not ours to take */
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(method, "GET") && strcmp(method, "HEAD")) return error_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
  if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
    return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", lumen_view_page, strlen(lumen_view_page));
  if (!strncmp(url, "/api/", 5)) return api(s, c, url);
  return error_reply(c, MHD_HTTP_NOT_FOUND, "not found");
}

view_server *view_server_start(view_run *run, const char *addr, int port, int *port_out, char *msg, size_t msg_size) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
  } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    flags |= MHD_USE_IPv6;
  } else {
    snprintf(msg, msg_size, "--bind '%s' is not an IPv4 or IPv6 address", addr);
    return NULL;
  }
  view_server *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(msg, msg_size, "out of memory");
    return NULL;
  }
  s->run = run;
  s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                          MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_LIMIT, 64u,
                          MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!s->d) {
    snprintf(msg, msg_size, "cannot listen on %s port %d (in use, or not an address of this machine)", addr, port);
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  *port_out = info ? (int)info->port : port;
  return s;
}

void view_server_stop(view_server *s) {
  if (!s) return;
  MHD_stop_daemon(s->d);
  free(s);
}
