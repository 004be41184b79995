/* The HTTP side of `lumen view` (view_http.c): a libmicrohttpd server answering the page and the
   JSON requests of view_data.h, nothing else (no file is served by its path). */
#ifndef LUMEN_VIEW_HTTP_H
#define LUMEN_VIEW_HTTP_H
#include "view/view_data.h"

typedef struct view_server view_server;

/* Listens on addr (an IPv4 or IPv6 address; the caller defaults it to 127.0.0.1) and port (0: a
   free one, *port_out says which). NULL with why in msg when it cannot. */
view_server *view_server_start(view_run *run, const char *addr, int port, int *port_out, char *msg, size_t msg_size);
void view_server_stop(view_server *s);

/* The page (view_page.c): plain HTML + JavaScript, written here, no network access. */
extern const char lumen_view_page[];

#endif
