// SPDX-License-Identifier: Apache-2.0
/* mcbench: a small, bounded load generator for the memcached text protocol, used by
 * bench/proxy/run.sh (make bench-proxy) because memslap/memaslap print no percentiles.
 *
 *   mcbench -p PORT [-h 127.0.0.1] [-c 50] [-n 100000] [-P 1] [-t set|get|mget] [-r 100000]
 *           [-d 3] [-k 10] [-T 60]
 *
 * -c connections, -n requests in all, -P pipeline depth (a connection sends P requests, waits for
 * the P replies, then sends the next P — as redis-benchmark -P does), -r key space (keys
 * "key:%012u" drawn at random below r), -d value bytes, -k keys per mget ("get k1 .. kK"),
 * -T seconds before it gives up. One epoll thread. A request's latency runs from the write of its
 * batch to the end of its reply. Prints one line: "ops_per_sec p50_ms p99_ms errors".
 * Exit 0 ok; 1 usage or connect error; 2 timeout, closed connection or protocol error.
 * Only ever connects to the host given (run.sh gives 127.0.0.1).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kSet, kGet, kMget };

typedef struct {
  int fd;
  int inflight;     /* replies still expected for the current batch */
  uint64_t sent_ns; /* when the batch was written */
  char* in;
  size_t in_len, in_cap;
  char* out;
  size_t out_len, out_off, out_cap;
  size_t resume; /* where parsing of the reply at the front of `in` goes on (a long multi-get
                    reply arrives in many reads: its whole VALUE blocks are not scanned again) */
} Conn;

static const char* host = "127.0.0.1";
static int port = 0, nconn = 50, pipeline = 1, test = kGet, value_bytes = 3, mget_keys = 10;
static long total = 100000, keyspace = 100000, limit_s = 60;
static long issued = 0, done = 0, errors = 0;
static uint32_t* lat_us;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t next_key(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)(((rng * 0x2545F4914F6CDD1Dull) >> 32) % (uint64_t)keyspace);
}

static void die(int code, const char* what) {
  fprintf(stderr, "mcbench: %s\n", what);
  exit(code);
}

static void reserve(char** buf, size_t* cap, size_t need) {
  if (need <= *cap) return;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  *buf = realloc(*buf, c);
  if (!*buf) die(1, "out of memory");
  *cap = c;
}

static void append(Conn* c, const char* s, size_t n) {
  reserve(&c->out, &c->out_cap, c->out_len + n);
  memcpy(c->out + c->out_len, s, n);
  c->out_len += n;
}

static void queue_batch(Conn* c) {
  static char value[1 << 16];
  if (!value[0]) memset(value, 'x', sizeof value);
  char line[64];
  c->out_len = c->out_off = 0;
  c->inflight = 0;
  for (int i = 0; i < pipeline && issued < total; ++i, ++issued, ++c->inflight) {
    if (test == kSet) {
      int n = snprintf(line, sizeof line, "set key:%012u 0 0 %d\r\n", next_key(), value_bytes);
      append(c, line, (size_t)n);
      append(c, value, (size_t)value_bytes);
      append(c, "\r\n", 2);
    } else {
      append(c, "get", 3);
      int keys = test == kMget ? mget_keys : 1;
      for (int k = 0; k < keys; ++k) {
        int n = snprintf(line, sizeof line, " key:%012u", next_key());
        append(c, line, (size_t)n);
      }
      append(c, "\r\n", 2);
    }
  }
  c->sent_ns = now_ns();
}

/* Consumes one whole reply from the front of c->in; returns its length, 0 if incomplete (then
 * *resume is where the next call may start: after the last whole VALUE block). */
static size_t reply_len(const char* p, size_t n, int* is_error, size_t* resume) {
  size_t pos = *resume;
  for (;;) {
    const char* eol = memmem(p + pos, n - pos, "\r\n", 2);
    if (!eol) return 0;
    size_t line_len = (size_t)(eol - (p + pos));
    const char* line = p + pos;
    size_t next = pos + line_len + 2;
    if (test == kSet) {
      *is_error = !(line_len == 6 && memcmp(line, "STORED", 6) == 0);
      return next;
    }
    if (line_len >= 6 && memcmp(line, "VALUE ", 6) == 0) {
      /* VALUE <key> <flags> <bytes> [<cas>] */
      const char* s = line + 6;
      const char* end = line + line_len;
      int field = 0;
      unsigned long bytes = 0;
      while (s < end && field < 3) {
        while (s < end && *s == ' ') ++s;
        const char* t = s;
        while (t < end && *t != ' ') ++t;
        if (field == 2) bytes = strtoul(s, NULL, 10);
        ++field;
        s = t;
      }
      if (field < 3) die(2, "malformed VALUE line");
      if (n < next + bytes + 2) return 0;
      pos = next + bytes + 2;
      *resume = pos;
      continue;
    }
    *is_error = !(line_len == 3 && memcmp(line, "END", 3) == 0);
    return next;
  }
}

static int cmp_u32(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  int opt;
  while ((opt = getopt(argc, argv, "h:p:c:n:P:t:r:d:k:T:")) != -1) {
    switch (opt) {
      case 'h':
        host = optarg;
        break;
      case 'p':
        port = atoi(optarg);
        break;
      case 'c':
        nconn = atoi(optarg);
        break;
      case 'n':
        total = atol(optarg);
        break;
      case 'P':
        pipeline = atoi(optarg);
        break;
      case 't':
        test = strcmp(optarg, "set") == 0    ? kSet
               : strcmp(optarg, "get") == 0  ? kGet
               : strcmp(optarg, "mget") == 0 ? kMget
                                             : -1;
        break;
      case 'r':
        keyspace = atol(optarg);
        break;
      case 'd':
        value_bytes = atoi(optarg);
        break;
      case 'k':
        mget_keys = atoi(optarg);
        break;
      case 'T':
        limit_s = atol(optarg);
        break;
      default:
        die(1,
            "usage: mcbench -p PORT [-h HOST] [-c N] [-n N] [-P N] [-t set|get|mget] [-r N] [-d N] "
            "[-k N] [-T S]");
    }
  }
  if (port <= 0 || nconn <= 0 || total <= 0 || pipeline <= 0 || test < 0 || keyspace <= 0 ||
      value_bytes <= 0 || value_bytes > (1 << 16) || mget_keys <= 0 || limit_s <= 0)
    die(1, "bad arguments (mcbench -p PORT ...)");
  lat_us = calloc((size_t)total, sizeof *lat_us);
  Conn* conns = calloc((size_t)nconn, sizeof *conns);
  int ep = epoll_create1(0);
  if (!lat_us || !conns || ep < 0) die(1, "setup failed");

  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) die(1, "bad host (IPv4 only)");
  for (int i = 0; i < nconn; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) die(1, "connect failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    conns[i].fd = fd;
  }

  const uint64_t start = now_ns();
  const uint64_t deadline = start + (uint64_t)limit_s * 1000000000ull;
  for (int i = 0; i < nconn; ++i) {
    Conn* c = &conns[i];
    queue_batch(c);
    if (c->inflight == 0) continue;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
  }

  struct epoll_event events[256];
  char buf[65536];
  while (done < total) {
    if (now_ns() > deadline) {
      fprintf(stderr, "mcbench: timed out after %lds with %ld of %ld replies\n", limit_s, done,
              total);
      return 2;
    }
    int n = epoll_wait(ep, events, 256, 100);
    if (n < 0 && errno != EINTR) die(2, "epoll_wait failed");
    for (int e = 0; e < n; ++e) {
      Conn* c = events[e].data.ptr;
      if ((events[e].events & EPOLLOUT) && c->out_off < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0 && errno != EAGAIN && errno != EINTR) die(2, "write failed (server closed?)");
        if (w > 0) c->out_off += (size_t)w;
        if (c->out_off == c->out_len) {
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
      }
      if (!(events[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      ssize_t r = read(c->fd, buf, sizeof buf);
      if (r == 0) die(2, "server closed a connection");
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        die(2, "read failed");
      }
      reserve(&c->in, &c->in_cap, c->in_len + (size_t)r);
      memcpy(c->in + c->in_len, buf, (size_t)r);
      c->in_len += (size_t)r;
      size_t off = 0;
      const uint64_t t = now_ns();
      for (;;) {
        int is_error = 0;
        size_t len = reply_len(c->in + off, c->in_len - off, &is_error, &c->resume);
        if (len == 0) break;
        c->resume = 0;
        if (c->inflight == 0) die(2, "reply without a request");
        off += len;
        errors += is_error;
        uint64_t us = (t - c->sent_ns) / 1000;
        lat_us[done++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
        --c->inflight;
      }
      memmove(c->in, c->in + off, c->in_len - off);
      c->in_len -= off;
      if (c->inflight == 0) {
        if (c->in_len) die(2, "unexpected bytes after the last reply");
        queue_batch(c);
        if (c->inflight > 0) {
          struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        } else {
          epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        }
      }
    }
  }
  const double secs = (double)(now_ns() - start) / 1e9;
  qsort(lat_us, (size_t)done, sizeof *lat_us, cmp_u32);
  const double p50 = lat_us[(size_t)((double)(done - 1) * 0.50)] / 1000.0;
  const double p99 = lat_us[(size_t)((double)(done - 1) * 0.99)] / 1000.0;
  printf("%.2f %.3f %.3f %ld\n", (double)done / secs, p50, p99, errors);
  for (int i = 0; i < nconn; ++i) close(conns[i].fd);
  return 0;
}
