// One-file copy ceilings: N threads copy one page-cached file into a new one in 1 MiB blocks
// claimed in order from a shared counter (as paracrypt's file driver claims its tasks), each
// reading its block with pread into its own buffer and touching every cache line of it (a
// stand-in for the transform) before writing it: `lock` writes under one mutex (one writer at
// a time), `free` writes with no lock (the kernel's inode lock alone orders them), `mmap`
// copies into a shared writable mapping of the output after fallocate. Prints GB/s: the
// ceiling for file -> file with the reads, not only the writes. Part of scripts/cores-bench.sh.
//   onecopy lock|free|mmap IN OUT THREADS
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define BLK (1ul << 20)
static size_t total, blocks; static int in, out; static char *map; static const char *mode;
static atomic_size_t next; static pthread_mutex_t writer = PTHREAD_MUTEX_INITIALIZER;
static void *run(void *a) {
  (void)a;
  char *buf; if (posix_memalign((void **)&buf, 4096, BLK)) exit(1);
  for (;;) {
    size_t b = atomic_fetch_add(&next, 1); if (b >= blocks) break;
    size_t at = b * BLK, n = total - at < BLK ? total - at : BLK;
    if (pread(in, buf, n, at) != (ssize_t)n) { perror("pread"); exit(1); }
    for (size_t i = 0; i < n; i += 64) buf[i] ^= 1;
    if (map) { memcpy(map + at, buf, n); continue; }
    int locked = !strcmp(mode, "lock");
    if (locked) pthread_mutex_lock(&writer);
    if (pwrite(out, buf, n, at) != (ssize_t)n) { perror("pwrite"); exit(1); }
    if (locked) pthread_mutex_unlock(&writer);
  }
  free(buf);
  return 0;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int c, char **v) {
  if (c < 5) { fprintf(stderr, "usage: onecopy lock|free|mmap IN OUT THREADS\n"); return 2; }
  mode = v[1]; int threads = atoi(v[4]);
  if (threads < 1 || threads > 1024) return 2;
  double a = now();
  in = open(v[2], O_RDONLY);
  struct stat st; if (in < 0 || fstat(in, &st)) { perror(v[2]); return 1; }
  total = st.st_size; blocks = (total + BLK - 1) / BLK;
  unlink(v[3]);
  out = open(v[3], O_RDWR | O_CREAT | O_EXCL, 0600);
  if (out < 0) { perror("open"); return 1; }
  if (!strcmp(mode, "mmap") && total) {
    int e = posix_fallocate(out, 0, total); if (e) { fprintf(stderr, "fallocate: %s\n", strerror(e)); return 1; }
    map = mmap(0, total, PROT_READ | PROT_WRITE, MAP_SHARED, out, 0); if (map == MAP_FAILED) { perror("mmap"); return 1; }
  }
  pthread_t t[1024];
  for (long i = 0; i < threads; i++) pthread_create(&t[i], 0, run, 0);
  for (int i = 0; i < threads; i++) pthread_join(t[i], 0);
  if (map) munmap(map, total);
  close(out);
  double s = now() - a;
  unlink(v[3]);
  printf("%.2f\n", total / s / 1e9);
  return 0;
}
