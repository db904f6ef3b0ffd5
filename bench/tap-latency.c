/*
 * tap-latency.c - round-trip latency of a ping loop, for measuring what
 * `opmsg tap` adds (bench/tap-latency.sh drives it).
 *
 *   tap-latency serve          answers every OP_MSG on 127.0.0.1 with
 *                              {ok: 1.0}; prints its port on stdout
 *   tap-latency ping PORT N    sends N pings (OP_MSG {ping: 1, $db: "admin"})
 *                              one at a time on one connection and prints
 *                              "median_us p99_us mean_us" of the round trips
 *
 * The server is deliberately trivial so the tap's cost is not lost in a real
 * server's variance; the script also measures against FerretDB when it is
 * installed.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 */
#include <opmsg/opmsg.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool
io_all(int fd, uint8_t *p, size_t len, bool write_it)
{
   while (len > 0) {
      ssize_t n = write_it ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

      if (n <= 0) {
         return false;
      }
      p += n;
      len -= (size_t) n;
   }
   return true;
}

/* Reads one message into buf (cap bytes); its length, or 0 at EOF/error. */
static size_t
read_message(int fd, uint8_t *buf, size_t cap)
{
   size_t len;

   if (!io_all(fd, buf, 16, false) || !opmsg_frame_length(buf, 16, NULL, &len, NULL) || len > cap ||
       !io_all(fd, buf + 16, len - 16, false)) {
      return 0;
   }
   return len;
}

static uint8_t *
build_msg(const bson_t *cmd, int32_t request_id, int32_t response_to, size_t *len)
{
   opmsg_build_t b;

   opmsg_build_init(&b, cmd);
   b.request_id = request_id;
   b.response_to = response_to;
   return opmsg_build_new(&b, len, NULL);
}

static void
nodelay(int fd)
{
   int one = 1;

   setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void
serve_one(int fd)
{
   static uint8_t buf[1 << 20];
   bson_t *ok = BCON_NEW("ok", BCON_DOUBLE(1.0));
   size_t len, reply_len;
   uint8_t *reply = build_msg(ok, 1, 0, &reply_len);

   nodelay(fd);
   while ((len = read_message(fd, buf, sizeof buf)) != 0) {
      int32_t id;

      memcpy(&id, buf + 4, 4);
      memcpy(reply + 8, &id, 4); /* responseTo */
      if (!io_all(fd, reply, reply_len, true)) {
         break;
      }
   }
   bson_free(reply);
   bson_destroy(ok);
   close(fd);
}

static int
serve(void)
{
   struct sockaddr_in sa;
   socklen_t sl = sizeof sa;
   int lfd = socket(AF_INET, SOCK_STREAM, 0);
   int one = 1;

   memset(&sa, 0, sizeof sa);
   sa.sin_family = AF_INET;
   sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
   setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
   if (bind(lfd, (struct sockaddr *) &sa, sizeof sa) != 0 || listen(lfd, 16) != 0 ||
       getsockname(lfd, (struct sockaddr *) &sa, &sl) != 0) {
      perror("serve");
      return 1;
   }
   printf("%u\n", (unsigned) ntohs(sa.sin_port));
   fflush(stdout);
   signal(SIGCHLD, SIG_IGN); /* no zombies */
   for (;;) {
      int fd = accept(lfd, NULL, NULL);

      if (fd < 0) {
         continue;
      }
      if (fork() == 0) {
         close(lfd);
         serve_one(fd);
         _exit(0);
      }
      close(fd);
   }
}

static int
cmp_double(const void *a, const void *b)
{
   double x = *(const double *) a, y = *(const double *) b;

   return x < y ? -1 : x > y;
}

static int
ping(int port, long n)
{
   static uint8_t buf[1 << 20];
   struct sockaddr_in sa;
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   double *rtt = calloc((size_t) n, sizeof *rtt), sum = 0;
   int fd = socket(AF_INET, SOCK_STREAM, 0);

   memset(&sa, 0, sizeof sa);
   sa.sin_family = AF_INET;
   sa.sin_port = htons((uint16_t) port);
   sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
   if (!rtt || connect(fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
      perror("connect");
      return 1;
   }
   nodelay(fd);
   for (long i = -100; i < n; i++) { /* 100 warm-up pings, not counted */
      size_t len;
      uint8_t *msg = build_msg(cmd, (int32_t) (i + 1000), 0, &len);
      struct timespec t0, t1;

      clock_gettime(CLOCK_MONOTONIC, &t0);
      if (!msg || !io_all(fd, msg, len, true) || read_message(fd, buf, sizeof buf) == 0) {
         fprintf(stderr, "tap-latency: ping %ld failed\n", i);
         return 1;
      }
      clock_gettime(CLOCK_MONOTONIC, &t1);
      bson_free(msg);
      if (i >= 0) {
         rtt[i] = (double) (t1.tv_sec - t0.tv_sec) * 1e6 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e3;
         sum += rtt[i];
      }
   }
   qsort(rtt, (size_t) n, sizeof *rtt, cmp_double);
   printf("%.1f %.1f %.1f\n", rtt[n / 2], rtt[(size_t) ((double) n * 0.99)], sum / (double) n);
   close(fd);
   free(rtt);
   bson_destroy(cmd);
   return 0;
}

int
main(int argc, char **argv)
{
   if (argc == 2 && strcmp(argv[1], "serve") == 0) {
      return serve();
   }
   if (argc == 4 && strcmp(argv[1], "ping") == 0 && atoi(argv[2]) > 0 && atol(argv[3]) > 0) {
      return ping(atoi(argv[2]), atol(argv[3]));
   }
   fprintf(stderr, "usage: %s serve | %s ping PORT N\n", argv[0], argv[0]);
   return 2;
}
