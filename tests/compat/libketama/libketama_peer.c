// SPDX-License-Identifier: Apache-2.0
/* The real libketama (the original last.fm C library) choosing servers for the compat key set:
 * the peer side of the libketama vectors. Run by generate.sh; writes the key lines of a vector
 * file.
 *
 *   libketama_peer SERVERS_FILE KEYS.hex
 *       SERVERS_FILE is libketama's own format, one "host:port<TAB>memory" line per server (the
 *       memory is the weight). For every key: "<key hex>\t<server>" from ketama_get_server().
 *
 * libketama keeps its continuum in SysV shared memory keyed by ftok(SERVERS_FILE): a segment left
 * behind by an earlier run for the same file could be reused, so this removes any such segment
 * first, and ketama_smoke() removes this run's segments at the end.
 *
 * Build (libketama is not packaged; generate.sh builds it from a checkout, outside this repo):
 *   cc -O2 -I$KETAMA/libketama -o libketama_peer libketama_peer.c \
 *      $KETAMA/libketama/ketama.c $KETAMA/libketama/md5.c -lm
 */
#include <ketama.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>

static void die(const char* what, const char* detail) {
  fprintf(stderr, "libketama_peer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: libketama_peer SERVERS_FILE KEYS.hex\n");
    return 2;
  }
  const key_t ipc_key = ftok(argv[1], 'R');
  if (ipc_key == -1) die("cannot ftok", argv[1]);
  const int stale_shm = shmget(ipc_key, 0, 0);
  if (stale_shm != -1) shmctl(stale_shm, IPC_RMID, NULL);
  const int stale_sem = semget(ipc_key, 0, 0);
  if (stale_sem != -1) semctl(stale_sem, 0, IPC_RMID);

  ketama_continuum cont;
  if (!ketama_roll(&cont, argv[1])) die("ketama_roll failed", ketama_error());
  fprintf(stderr, "libketama_peer: %d points\n", cont->numpoints);

  FILE* f = fopen(argv[2], "r");
  if (!f) die("cannot open", argv[2]);
  char line[1024];
  char key[512];
  while (fgets(line, sizeof line, f)) {
    const size_t n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n == 0) continue;
    if (n / 2 >= sizeof key) die("key too long", line);
    for (size_t i = 0; i < n / 2; ++i) {
      unsigned v;
      if (sscanf(line + 2 * i, "%2x", &v) != 1) die("bad hex key", line);
      key[i] = (char)v;
    }
    key[n / 2] = 0;  // libketama takes C strings: it hashes up to the first NUL
    const mcs* m = ketama_get_server(key, cont);
    printf("%s\t%s\n", line, m->ip);
  }
  fclose(f);
  ketama_smoke(cont);
  return 0;
}
