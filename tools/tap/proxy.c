/*
 * proxy.c - the live `opmsg tap`: a TCP proxy between clients and one
 * upstream server that hands a copy of every byte it forwards to the
 * logging thread (logger.c).
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * One thread and one poll() loop serve every connection. Bytes are
 * forwarded unchanged, whatever they contain: a message that breaks a rule
 * is logged with the rule's name and still forwarded, and EOFs are passed on
 * as half-closes, as a direct connection would. A side is read only when
 * the other has room (back pressure), so memory stays bounded per
 * connection.
 */
#include "tap-private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAP_READ_SIZE (256u * 1024u)

typedef struct {
   uint8_t *buf;
   size_t len;
   size_t cap;
} tap_out_t;

typedef struct {
   tap_session_t *ses; /* handed to the logging thread at close */
   int fd[2];          /* [0] the client, [1] the upstream server */
   tap_out_t out[2];   /* bytes waiting to be written to fd[i] */
   bool eof[2];        /* fd[i] has no more to read */
   bool shut[2];       /* shutdown(fd[i], SHUT_WR) done */
   bool connecting;    /* fd[1]'s connect() is in progress */
   bool dead;
} tap_conn_t;

/* The time a read or a close is logged with. */
static double
tap_now(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_REALTIME, &ts);
   return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static bool
tap_split_hostport(const char *text, char *host, size_t host_cap, char *port, size_t port_cap)
{
   const char *colon = strrchr(text, ':');
   const char *h = text;
   size_t hlen;

   if (!colon || colon[1] == '\0' || strlen(colon + 1) >= port_cap) {
      return false;
   }
   hlen = (size_t) (colon - text);
   if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') { /* [::1]:27017 */
      h++;
      hlen -= 2;
   }
   if (hlen == 0 || hlen >= host_cap) {
      return false;
   }
   memcpy(host, h, hlen);
   host[hlen] = '\0';
   strcpy(port, colon + 1);
   return true;
}

static struct addrinfo *
tap_resolve(const char *hostport, bool passive)
{
   char host[256], port[16];
   struct addrinfo hints, *res = NULL;
   int rc;

   if (!tap_split_hostport(hostport, host, sizeof host, port, sizeof port)) {
      fprintf(stderr, "opmsg tap: expected HOST:PORT, got '%s'\n", hostport);
      return NULL;
   }
   memset(&hints, 0, sizeof hints);
   hints.ai_family = AF_UNSPEC;
   hints.ai_socktype = SOCK_STREAM;
   hints.ai_flags = passive ? AI_PASSIVE : 0;
   rc = getaddrinfo(host, port, &hints, &res);
   if (rc != 0) {
      fprintf(stderr, "opmsg tap: cannot resolve '%s': %s\n", hostport, gai_strerror(rc));
      return NULL;
   }
   return res;
}

static bool
tap_nonblock(int fd)
{
   int fl = fcntl(fd, F_GETFL, 0);

   return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

static void
tap_nodelay(int fd)
{
   int one = 1;

   /* Wire messages are request/response: Nagle would add latency. */
   (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void
tap_addr_text(const struct sockaddr *sa, char *buf, size_t cap)
{
   char host[INET6_ADDRSTRLEN] = "?";
   unsigned port = 0;

   if (sa->sa_family == AF_INET) {
      const struct sockaddr_in *in = (const struct sockaddr_in *) (const void *) sa;

      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      port = ntohs(in->sin_port);
      bson_snprintf(buf, cap, "%s:%u", host, port);
   } else if (sa->sa_family == AF_INET6) {
      const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) (const void *) sa;

      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      port = ntohs(in6->sin6_port);
      bson_snprintf(buf, cap, "[%s]:%u", host, port);
   } else {
      bson_snprintf(buf, cap, "?");
   }
}

static int
tap_listen(const char *hostport)
{
   struct addrinfo *res = tap_resolve(hostport, true), *ai;
   int fd = -1;

   for (ai = res; ai; ai = ai->ai_next) {
      int one = 1;

      fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
      if (fd < 0) {
         continue;
      }
      (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0 && tap_nonblock(fd)) {
         break;
      }
      close(fd);
      fd = -1;
   }
   if (res && fd < 0) {
      fprintf(stderr, "opmsg tap: cannot listen on %s: %s\n", hostport, strerror(errno));
   }
   freeaddrinfo(res);
   return fd;
}

static void
tap_conn_close(tap_t *tap, tap_conn_t *c, const char *why)
{
   for (int i = 0; i < 2; i++) {
      if (c->fd[i] >= 0) {
         close(c->fd[i]);
         c->fd[i] = -1;
      }
      bson_free(c->out[i].buf);
      c->out[i].buf = NULL;
   }
   tap_post(tap, c->ses, TAP_ITEM_CLOSE, 0, tap_now(), why, NULL, 0);
   c->ses = NULL;
   c->dead = true;
}

/* Starts connecting to the upstream server for a new client. */
static tap_conn_t *
tap_conn_new(tap_t *tap, int cfd, const struct addrinfo *up, const struct sockaddr *peer)
{
   tap_conn_t *c = bson_malloc0(sizeof *c);
   char text[80];
   int ufd;

   c->ses = bson_malloc(sizeof *c->ses);
   tap_session_init(tap, c->ses);
   c->fd[0] = cfd;
   c->fd[1] = -1;
   tap_addr_text(peer, text, sizeof text);
   tap_post(tap, c->ses, TAP_ITEM_OPEN, 0, tap_now(), text, NULL, 0);

   ufd = socket(up->ai_family, up->ai_socktype, up->ai_protocol);
   if (ufd < 0 || !tap_nonblock(ufd)) {
      if (ufd >= 0) {
         close(ufd);
      }
      tap_conn_close(tap, c, "cannot create the upstream socket");
      return c;
   }
   tap_nodelay(ufd);
   c->fd[1] = ufd;
   if (connect(ufd, up->ai_addr, up->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
         char why[160];

         bson_snprintf(why, sizeof why, "upstream connect: %s", strerror(errno));
         tap_conn_close(tap, c, why);
         return c;
      }
      c->connecting = true;
   }
   return c;
}

/* Writes as much of data as fd takes now; false on a hard error. */
static bool
tap_send(int fd, const uint8_t *data, size_t len, size_t *sent)
{
   *sent = 0;
   while (*sent < len) {
      ssize_t n = send(fd, data + *sent, len - *sent, MSG_NOSIGNAL);

      if (n > 0) {
         *sent += (size_t) n;
      } else if (n < 0 && errno == EINTR) {
         continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
         return true;
      } else {
         return false;
      }
   }
   return true;
}

static bool
tap_out_append(tap_out_t *o, const uint8_t *data, size_t len)
{
   if (o->len + len > o->cap) {
      size_t cap = o->cap ? o->cap : TAP_READ_SIZE;

      while (cap < o->len + len) {
         cap *= 2;
      }
      o->buf = bson_realloc(o->buf, cap);
      o->cap = cap;
   }
   memcpy(o->buf + o->len, data, len);
   o->len += len;
   return true;
}

/* When the source of a direction is finished and all is written, pass the
 * EOF on (half-close), as a direct connection would. */
static void
tap_pass_eof(tap_conn_t *c, int src)
{
   int dst = 1 - src;

   if (c->eof[src] && c->out[dst].len == 0 && !c->shut[dst] && c->fd[dst] >= 0) {
      (void) shutdown(c->fd[dst], SHUT_WR);
      c->shut[dst] = true;
   }
}

static void
tap_conn_read(tap_t *tap, tap_conn_t *c, int src, uint8_t *buf)
{
   int dst = 1 - src;
   ssize_t n = recv(c->fd[src], buf, TAP_READ_SIZE, 0);
   size_t sent = 0;

   if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
         return;
      }
      tap_conn_close(tap, c, src == 0 ? "client read error" : "upstream read error");
      return;
   }
   if (n == 0) {
      c->eof[src] = true;
      tap_pass_eof(c, src);
      return;
   }
   /* Forward first, log afterwards. */
   if (c->out[dst].len == 0 && !tap_send(c->fd[dst], buf, (size_t) n, &sent)) {
      tap_conn_close(tap, c, dst == 0 ? "client write error" : "upstream write error");
      return;
   }
   if (sent < (size_t) n) {
      tap_out_append(&c->out[dst], buf + sent, (size_t) n - sent);
   }
   tap_post(tap, c->ses, TAP_ITEM_DATA, src == 0 ? TAP_C2S : TAP_S2C, tap_now(), NULL, buf, (size_t) n);
}

static void
tap_conn_write(tap_t *tap, tap_conn_t *c, int dst)
{
   tap_out_t *o = &c->out[dst];
   size_t sent;

   if (c->connecting && dst == 1) {
      int err = 0;
      socklen_t len = sizeof err;

      if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
         char why[160];

         bson_snprintf(why, sizeof why, "upstream connect: %s", strerror(err ? err : errno));
         tap_conn_close(tap, c, why);
         return;
      }
      c->connecting = false;
   }
   if (o->len == 0) {
      return;
   }
   if (!tap_send(c->fd[dst], o->buf, o->len, &sent)) {
      tap_conn_close(tap, c, dst == 0 ? "client write error" : "upstream write error");
      return;
   }
   memmove(o->buf, o->buf + sent, o->len - sent);
   o->len -= sent;
   tap_pass_eof(c, 1 - dst);
}

static void
tap_accept(tap_t *tap, int lfd, const struct addrinfo *up, tap_conn_t ***conns, size_t *n, size_t *cap)
{
   for (;;) {
      struct sockaddr_storage peer;
      socklen_t plen = sizeof peer;
      int cfd = accept(lfd, (struct sockaddr *) &peer, &plen);

      if (cfd < 0) {
         if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
            fprintf(stderr, "opmsg tap: accept: %s\n", strerror(errno));
         }
         return;
      }
      if (!tap_nonblock(cfd)) {
         close(cfd);
         continue;
      }
      tap_nodelay(cfd);
      if (*n == *cap) {
         *cap = *cap ? *cap * 2 : 16;
         *conns = bson_realloc(*conns, *cap * sizeof **conns);
      }
      (*conns)[(*n)++] = tap_conn_new(tap, cfd, up, (struct sockaddr *) &peer);
   }
}

int
tap_run_proxy(tap_t *tap)
{
   struct addrinfo *up = tap_resolve(tap->o.upstream, false);
   tap_conn_t **conns = NULL;
   size_t n_conns = 0, cap_conns = 0;
   struct pollfd *pfds = NULL;
   size_t cap_pfds = 0;
   uint8_t *buf;
   int lfd;
   struct sockaddr_storage bound;
   socklen_t blen = sizeof bound;
   char text[80];

   if (!up) {
      return 2;
   }
   lfd = tap_listen(tap->o.listen);
   if (lfd < 0) {
      freeaddrinfo(up);
      return 2;
   }
   if (getsockname(lfd, (struct sockaddr *) &bound, &blen) == 0) {
      tap_addr_text((struct sockaddr *) &bound, text, sizeof text);
      /* Tests and scripts read this line to learn a port 0 listener's port. */
      fprintf(stderr, "opmsg tap: listening on %s, upstream %s\n", text, tap->o.upstream);
   }
   if (!tap_logger_start(tap)) {
      close(lfd);
      freeaddrinfo(up);
      return 2;
   }
   buf = bson_malloc(TAP_READ_SIZE);

   while (!tap_stop) {
      size_t np = 0;
      int ready;

      if (cap_pfds < 1 + 2 * n_conns) {
         cap_pfds = 2 * (1 + 2 * n_conns);
         pfds = bson_realloc(pfds, cap_pfds * sizeof *pfds);
      }
      pfds[np].fd = lfd;
      pfds[np].events = POLLIN;
      np++;
      for (size_t i = 0; i < n_conns; i++) {
         tap_conn_t *c = conns[i];

         for (int side = 0; side < 2; side++) {
            short ev = 0;

            /* Read a side only when the other side has room (back
             * pressure), and the client only once upstream is connected. */
            if (!c->eof[side] && c->out[1 - side].len == 0 && !c->connecting) {
               ev |= POLLIN;
            }
            if (c->out[side].len > 0 || (side == 1 && c->connecting)) {
               ev |= POLLOUT;
            }
            /* An idle side is left out: a hung-up socket we no longer
             * read would otherwise wake poll() at once, forever. */
            pfds[np].fd = ev ? c->fd[side] : -1;
            pfds[np].events = ev;
            pfds[np].revents = 0;
            np++;
         }
      }
      ready = poll(pfds, (nfds_t) np, -1);
      if (ready < 0) {
         if (errno == EINTR) {
            continue;
         }
         fprintf(stderr, "opmsg tap: poll: %s\n", strerror(errno));
         break;
      }
      for (size_t i = 0; i < n_conns; i++) {
         tap_conn_t *c = conns[i];

         for (int side = 0; side < 2 && !c->dead; side++) {
            short re = pfds[1 + 2 * i + (size_t) side].revents;

            if (re & (POLLOUT | POLLERR | POLLHUP) && (c->out[side].len > 0 || (side == 1 && c->connecting))) {
               tap_conn_write(tap, c, side);
            }
            if (!c->dead && re & (POLLIN | POLLHUP | POLLERR) && !c->eof[side] && !c->connecting &&
                c->out[1 - side].len == 0) {
               tap_conn_read(tap, c, side, buf);
            }
         }
         if (!c->dead && c->eof[0] && c->eof[1] && c->out[0].len == 0 && c->out[1].len == 0) {
            tap_conn_close(tap, c, NULL);
         }
      }
      /* Drop closed connections, keeping the order. */
      {
         size_t kept = 0;

         for (size_t i = 0; i < n_conns; i++) {
            if (conns[i]->dead) {
               bson_free(conns[i]);
            } else {
               conns[kept++] = conns[i];
            }
         }
         n_conns = kept;
      }
      if (pfds[0].revents & POLLIN) {
         tap_accept(tap, lfd, up, &conns, &n_conns, &cap_conns);
      }
   }

   for (size_t i = 0; i < n_conns; i++) {
      tap_conn_close(tap, conns[i], "tap stopped");
      bson_free(conns[i]);
   }
   tap_logger_stop(tap);
   bson_free(conns);
   bson_free(pfds);
   bson_free(buf);
   close(lfd);
   freeaddrinfo(up);
   return 0;
}
