/* SPDX-License-Identifier: Apache-2.0
 * psbench — Pub/Sub fan-out load for bench/pubsub/run.py: S subscribers SUBSCRIBE one channel
 * on host:port, one publisher pipelines N PUBLISHes of a D-byte payload (P at a time), and the
 * run ends when every subscriber has received all N messages. Prints one line:
 *   subscribers=S messages=N seconds=T delivered_per_s=R published_per_s=Q receivers=K lost=L
 * (K: the count the first PUBLISH answered, L: messages not received within the timeout).
 * Plain C and POSIX threads, so the bench builds with `cc` and measures the server or proxy, not
 * a client library. A message's RESP2 frame has a fixed size for a fixed channel and payload, so
 * a subscriber counts bytes, not frames (no parser in the measured path).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char* host = "127.0.0.1";
static int port = 6379, subscribers = 10, messages = 100000, payload = 32, pipeline = 64;
static const char* channel = "bench";
static size_t frame;           /* bytes of one message frame */
static double deadline_s = 60; /* per run */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  inet_pton(AF_INET, host, &a.sin_addr);
  if (fd < 0 || connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
    fprintf(stderr, "psbench: connect %s:%d: %s\n", host, port, strerror(errno));
    exit(2);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) {
      fprintf(stderr, "psbench: send: %s\n", strerror(errno));
      exit(2);
    }
    p += w;
    n -= (size_t)w;
  }
}

/* Reads until `want` bytes have arrived (or the deadline); returns the bytes read. */
static size_t read_bytes(int fd, size_t want, double until) {
  static __thread char buf[1 << 16];
  size_t got = 0;
  while (got < want && now_s() < until) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r > 0) got += (size_t)r;
    else if (r == 0) break;
    else if (errno != EAGAIN && errno != EINTR) break;
  }
  return got;
}

struct sub {
  int fd;
  size_t got;
  double done_at;
  pthread_t thread;
};
static double start_at;

static void* subscriber(void* arg) {
  struct sub* s = arg;
  s->got = read_bytes(s->fd, frame * (size_t)messages, start_at + deadline_s);
  s->done_at = now_s();
  return NULL;
}

int main(int argc, char** argv) {
  int opt;
  while ((opt = getopt(argc, argv, "h:p:s:n:d:P:c:t:")) != -1) {
    switch (opt) {
      case 'h': host = optarg; break;
      case 'p': port = atoi(optarg); break;
      case 's': subscribers = atoi(optarg); break;
      case 'n': messages = atoi(optarg); break;
      case 'd': payload = atoi(optarg); break;
      case 'P': pipeline = atoi(optarg); break;
      case 'c': channel = optarg; break;
      case 't': deadline_s = atof(optarg); break;
      default:
        fprintf(stderr, "usage: psbench -p port [-h host] [-s subs] [-n msgs] [-d bytes] [-P pipeline] [-c channel] [-t s]\n");
        return 2;
    }
  }
  if (subscribers < 1 || messages < 1 || payload < 1 || pipeline < 1) return 2;
  char* body = malloc((size_t)payload);
  memset(body, 'x', (size_t)payload);
  char head[128];
  size_t clen = strlen(channel);
  /* *3 $7 message $<clen> <channel> $<payload> <body> */
  frame = (size_t)snprintf(head, sizeof head, "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%d\r\n", clen,
                           channel, payload) +
          (size_t)payload + 2;
  struct sub* subs = calloc((size_t)subscribers, sizeof *subs);
  char cmd[512];
  int n = snprintf(cmd, sizeof cmd, "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n%s\r\n", clen, channel);
  size_t confirm = (size_t)snprintf(head, sizeof head, "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n",
                                    clen, channel);
  for (int i = 0; i < subscribers; i++) {
    subs[i].fd = dial();
    send_all(subs[i].fd, cmd, (size_t)n);
    if (read_bytes(subs[i].fd, confirm, now_s() + 5) != confirm) {
      fprintf(stderr, "psbench: no SUBSCRIBE confirmation\n");
      return 2;
    }
  }
  /* One PUBLISH as a request, built once. */
  size_t plen = (size_t)snprintf(cmd, sizeof cmd, "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n", clen,
                                 channel, payload);
  size_t one = plen + (size_t)payload + 2;
  char* batch = malloc(one * (size_t)pipeline);
  for (int i = 0; i < pipeline; i++) {
    memcpy(batch + one * (size_t)i, cmd, plen);
    memcpy(batch + one * (size_t)i + plen, body, (size_t)payload);
    memcpy(batch + one * (size_t)i + plen + (size_t)payload, "\r\n", 2);
  }
  int pub = dial();
  char reply[64];
  int rn = snprintf(reply, sizeof reply, ":%d\r\n", subscribers);
  start_at = now_s();
  for (int i = 0; i < subscribers; i++) pthread_create(&subs[i].thread, NULL, subscriber, &subs[i]);
  long receivers = -1;
  for (int sent = 0; sent < messages;) {
    int k = messages - sent < pipeline ? messages - sent : pipeline;
    send_all(pub, batch, one * (size_t)k);
    /* Every reply is ":S\r\n" while all subscribers are subscribed. */
    size_t want = (size_t)rn * (size_t)k;
    char buf[1 << 14];
    size_t got = 0;
    while (got < want) {
      ssize_t r = recv(pub, buf, sizeof buf, 0);
      if (r <= 0) {
        fprintf(stderr, "psbench: publisher: %s\n", r == 0 ? "closed" : strerror(errno));
        return 2;
      }
      if (receivers < 0) receivers = strtol(buf + 1, NULL, 10);
      got += (size_t)r;
    }
    sent += k;
  }
  double last = start_at;
  long lost = 0;
  for (int i = 0; i < subscribers; i++) {
    pthread_join(subs[i].thread, NULL);
    if (subs[i].done_at > last) last = subs[i].done_at;
    lost += (long)(messages - (long)(subs[i].got / frame));
  }
  double secs = last - start_at;
  printf("subscribers=%d messages=%d seconds=%.4f delivered_per_s=%.0f published_per_s=%.0f "
         "receivers=%ld lost=%ld\n",
         subscribers, messages, secs, (double)subscribers * messages / secs, messages / secs,
         receivers, lost);
  return lost == 0 ? 0 : 1;
}
