/*
 * pcap.c - `opmsg tap --pcap`: the same log from a capture file instead of
 * a live proxy.
 *
 * Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.
 *
 * libpcap reads the file; the rest is done here: the link layer (Ethernet
 * with VLAN tags, Linux cooked, loopback, raw IP), IPv4 and IPv6 headers,
 * and TCP reassembly per direction of each connection to the server port
 * (out-of-order segments held until the gap fills, retransmissions and
 * overlaps trimmed, sequence numbers modulo 2^32). What comes out in order
 * is fed to the same session code as the live proxy's bytes (session.c),
 * so both log the same lines for the same bytes.
 */
#include "tap-private.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <string.h>
#include <sys/socket.h>

#define TAP_OOO_MAX_SEGMENTS 256u /* out-of-order segments kept per direction */

typedef struct tap_segment {
   struct tap_segment *next;
   uint32_t seq;
   size_t len;
   uint8_t data[];
} tap_segment_t;

typedef struct {
   bool have_next;
   uint32_t next_seq; /* the sequence number of the next byte to feed */
   bool fin;
   tap_segment_t *ooo; /* segments past a gap, sorted by seq */
   size_t n_ooo;
} tap_half_t;

typedef struct tap_flow {
   struct tap_flow *next;
   uint8_t key[36]; /* client address, server address (16 each), ports */
   tap_session_t ses;
   tap_half_t half[2];
} tap_flow_t;

#define TAP_FLOW_BUCKETS 1024u

typedef struct {
   tap_flow_t *bucket[TAP_FLOW_BUCKETS];
} tap_flows_t;

static uint32_t
tap_key_hash(const uint8_t *key)
{
   uint32_t h = 2166136261u;

   for (size_t i = 0; i < 36; i++) {
      h = (h ^ key[i]) * 16777619u;
   }
   return h % TAP_FLOW_BUCKETS;
}

static void
tap_flow_free(tap_flow_t *f)
{
   for (int d = 0; d < 2; d++) {
      tap_segment_t *seg = f->half[d].ooo;

      while (seg) {
         tap_segment_t *next = seg->next;

         bson_free(seg);
         seg = next;
      }
   }
   bson_free(f);
}

static void
tap_flow_end(tap_t *tap, tap_flows_t *flows, tap_flow_t *f, double now, const char *why)
{
   tap_flow_t **pp = &flows->bucket[tap_key_hash(f->key)];

   while (*pp && *pp != f) {
      pp = &(*pp)->next;
   }
   if (*pp) {
      *pp = f->next;
   }
   tap_session_close(tap, &f->ses, now, why);
   tap_flow_free(f);
}

/* Signed distance between sequence numbers, modulo 2^32. */
static int64_t
tap_seq_diff(uint32_t a, uint32_t b)
{
   return (int64_t) (int32_t) (a - b);
}

/* Feeds the segment's bytes that are new, in order. */
static void
tap_half_deliver(tap_t *tap, tap_flow_t *f, int dir, uint32_t seq, const uint8_t *data, size_t len, double now)
{
   tap_half_t *h = &f->half[dir];
   int64_t off = tap_seq_diff(seq, h->next_seq);

   if (off < 0) { /* a retransmission, perhaps with new bytes at its end */
      if ((int64_t) len <= -off) {
         return;
      }
      data += -off;
      len -= (size_t) -off;
      off = 0;
   }
   if (off > 0) { /* past a gap: keep it until the gap fills */
      tap_segment_t **pp = &h->ooo, *seg;

      if (h->n_ooo >= TAP_OOO_MAX_SEGMENTS) {
         tap_log_event(tap, &f->ses, now, "gap", "too many segments missing: not logging this direction any more");
         f->ses.dir[dir].broken = true;
         return;
      }
      seg = bson_malloc(sizeof *seg + len);
      seg->seq = seq;
      seg->len = len;
      memcpy(seg->data, data, len);
      while (*pp && tap_seq_diff((*pp)->seq, seq) < 0) {
         pp = &(*pp)->next;
      }
      seg->next = *pp;
      *pp = seg;
      h->n_ooo++;
      return;
   }
   tap_feed(tap, &f->ses, dir, data, len, now);
   h->next_seq += (uint32_t) len;
   /* Whatever now follows on. */
   while (h->ooo && tap_seq_diff(h->ooo->seq, h->next_seq) <= 0) {
      tap_segment_t *seg = h->ooo;
      int64_t skip = tap_seq_diff(h->next_seq, seg->seq);

      h->ooo = seg->next;
      h->n_ooo--;
      if ((int64_t) seg->len > skip) {
         tap_feed(tap, &f->ses, dir, seg->data + skip, seg->len - (size_t) skip, now);
         h->next_seq += (uint32_t) (seg->len - (size_t) skip);
      }
      bson_free(seg);
   }
}

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04

static void
tap_tcp_segment(tap_t *tap, tap_flows_t *flows, const uint8_t *src_ip, const uint8_t *dst_ip, size_t ip_len,
                const uint8_t *tcp, size_t tcp_len, double now)
{
   uint16_t sport = (uint16_t) (tcp[0] << 8 | tcp[1]);
   uint16_t dport = (uint16_t) (tcp[2] << 8 | tcp[3]);
   uint32_t seq = (uint32_t) tcp[4] << 24 | (uint32_t) tcp[5] << 16 | (uint32_t) tcp[6] << 8 | tcp[7];
   size_t off = (size_t) (tcp[12] >> 4) * 4;
   uint8_t flags = tcp[13];
   uint8_t key[36] = {0};
   const uint8_t *client_ip, *server_ip;
   uint16_t client_port, server_port;
   tap_flow_t *f;
   tap_half_t *h;
   int dir;

   if (off < 20 || off > tcp_len) {
      return;
   }
   if (dport == tap->o.port) {
      dir = TAP_C2S;
      client_ip = src_ip, server_ip = dst_ip;
      client_port = sport, server_port = dport;
   } else if (sport == tap->o.port) {
      dir = TAP_S2C;
      client_ip = dst_ip, server_ip = src_ip;
      client_port = dport, server_port = sport;
   } else {
      return;
   }
   memcpy(key, client_ip, ip_len);
   memcpy(key + 16, server_ip, ip_len);
   key[32] = (uint8_t) (client_port >> 8), key[33] = (uint8_t) client_port;
   key[34] = (uint8_t) (server_port >> 8), key[35] = (uint8_t) server_port;

   for (f = flows->bucket[tap_key_hash(key)]; f; f = f->next) {
      if (memcmp(f->key, key, sizeof key) == 0) {
         break;
      }
   }
   if (f && dir == TAP_C2S && (flags & TCP_SYN) && !(flags & 0x10) && f->half[dir].have_next &&
       seq + 1 != f->half[dir].next_seq) {
      /* The same ports again: a new connection. */
      tap_flow_end(tap, flows, f, now, "port reused");
      f = NULL;
   }
   if (!f) {
      char text[INET6_ADDRSTRLEN + 8];
      char host[INET6_ADDRSTRLEN];

      if ((flags & (TCP_RST | TCP_FIN)) || (!(flags & TCP_SYN) && tcp_len == off)) {
         return; /* the end of something not seen, or a last ACK */
      }
      f = bson_malloc0(sizeof *f);
      memcpy(f->key, key, sizeof key);
      tap_session_init(tap, &f->ses);
      f->next = flows->bucket[tap_key_hash(key)];
      flows->bucket[tap_key_hash(key)] = f;
      inet_ntop(ip_len == 4 ? AF_INET : AF_INET6, client_ip, host, sizeof host);
      bson_snprintf(text, sizeof text, ip_len == 4 ? "%s:%u" : "[%s]:%u", host, (unsigned) client_port);
      tap_log_event(tap, &f->ses, now, "open", text);
   }
   h = &f->half[dir];
   if (flags & TCP_SYN) {
      h->have_next = true;
      h->next_seq = seq + 1;
   } else if (!h->have_next) {
      h->have_next = true; /* the capture started mid-connection */
      h->next_seq = seq;
   }
   if (tcp_len > off) {
      tap_half_deliver(tap, f, dir, (flags & TCP_SYN) ? seq + 1 : seq, tcp + off, tcp_len - off, now);
   }
   if (flags & TCP_RST) {
      tap_flow_end(tap, flows, f, now, "reset");
      return;
   }
   if (flags & TCP_FIN) {
      h->fin = true;
   }
   if (f->half[0].fin && f->half[1].fin) {
      tap_flow_end(tap, flows, f, now, NULL);
   }
}

/* Finds the IP packet in a frame of the capture's link type. */
static const uint8_t *
tap_link_payload(int dlt, const uint8_t *p, size_t caplen, size_t *len)
{
   size_t skip;
   uint16_t ethertype = 0;

   switch (dlt) {
   case DLT_EN10MB:
      if (caplen < 14) {
         return NULL;
      }
      ethertype = (uint16_t) (p[12] << 8 | p[13]);
      skip = 14;
      while (ethertype == 0x8100 || ethertype == 0x88a8) { /* VLAN tags */
         if (caplen < skip + 4) {
            return NULL;
         }
         ethertype = (uint16_t) (p[skip + 2] << 8 | p[skip + 3]);
         skip += 4;
      }
      if (ethertype != 0x0800 && ethertype != 0x86dd) {
         return NULL;
      }
      break;
   case DLT_LINUX_SLL:
      skip = 16;
      break;
#ifdef DLT_LINUX_SLL2
   case DLT_LINUX_SLL2:
      skip = 20;
      break;
#endif
   case DLT_NULL:
   case DLT_LOOP:
      skip = 4;
      break;
   case DLT_RAW:
#ifdef DLT_IPV4
   case DLT_IPV4:
   case DLT_IPV6:
#endif
      skip = 0;
      break;
   default:
      return NULL;
   }
   if (caplen <= skip) {
      return NULL;
   }
   *len = caplen - skip;
   return p + skip;
}

static void
tap_ip_packet(tap_t *tap, tap_flows_t *flows, const uint8_t *ip, size_t len, double now)
{
   if (len >= 20 && ip[0] >> 4 == 4) {
      size_t ihl = (size_t) (ip[0] & 0x0f) * 4;
      size_t total = (size_t) (ip[2] << 8 | ip[3]);
      uint16_t frag = (uint16_t) ((ip[6] & 0x1f) << 8 | ip[7]);

      if (ip[9] != 6 || ihl < 20 || total < ihl || (ip[6] & 0x20) || frag) {
         return; /* not TCP, or a fragment */
      }
      if (total > len) {
         return; /* truncated by the snap length: the bytes are not there */
      }
      if (total - ihl >= 20) {
         tap_tcp_segment(tap, flows, ip + 12, ip + 16, 4, ip + ihl, total - ihl, now);
      }
   } else if (len >= 40 && ip[0] >> 4 == 6) {
      size_t payload = (size_t) (ip[4] << 8 | ip[5]);

      if (ip[6] != 6 || 40 + payload > len || payload < 20) {
         return; /* extension headers are not followed */
      }
      tap_tcp_segment(tap, flows, ip + 8, ip + 24, 16, ip + 40, payload, now);
   }
}

int
tap_run_pcap(tap_t *tap)
{
   char errbuf[PCAP_ERRBUF_SIZE];
   pcap_t *pc = pcap_open_offline_with_tstamp_precision(tap->o.pcap_path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
   tap_flows_t *flows;
   struct pcap_pkthdr *hdr;
   const u_char *pkt;
   double last = 0;
   int dlt, rc = 0, status = 0; /* tap_stop may change between the two reads */

   if (!pc) {
      fprintf(stderr, "opmsg tap: %s\n", errbuf);
      return 2;
   }
   dlt = pcap_datalink(pc);
   flows = bson_malloc0(sizeof *flows);
   while (!tap_stop && (rc = pcap_next_ex(pc, &hdr, &pkt)) >= 0) {
      const uint8_t *ip;
      size_t ip_len;
      double now;

      if (rc == 0) {
         continue;
      }
      /* Opened with nanosecond precision: tv_usec holds nanoseconds. */
      now = (double) hdr->ts.tv_sec + (double) hdr->ts.tv_usec / 1e9;
      last = now;
      ip = tap_link_payload(dlt, pkt, hdr->caplen, &ip_len);
      if (ip) {
         tap_ip_packet(tap, flows, ip, ip_len, now);
      }
   }
   if (!tap_stop && rc == PCAP_ERROR) {
      fprintf(stderr, "opmsg tap: %s: %s\n", tap->o.pcap_path, pcap_geterr(pc));
      status = 1;
   }
   for (size_t b = 0; b < TAP_FLOW_BUCKETS; b++) {
      while (flows->bucket[b]) {
         tap_flow_end(tap, flows, flows->bucket[b], last, "end of capture");
      }
   }
   bson_free(flows);
   pcap_close(pc);
   return status;
}
