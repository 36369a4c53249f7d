// One-file ceilings: N threads read (pread) or write one file, each its own contiguous slice in
// 1 MiB blocks; prints GB/s. Writes go to a new file: `pwrite` (buffered), `mmap` (a shared
// writable mapping after fallocate, so that a full disk fails here instead of raising SIGBUS
// later), `populate` (the same mapping, each block's pages faulted in by one
// madvise(MADV_POPULATE_WRITE) before the copy; Linux 5.14) or `direct` (O_DIRECT pwrite, where
// the filesystem takes it). Reads need the file to
// exist (its page-cached or on-disk speed, as the caller prepared it). Part of
// scripts/cores-bench.sh.
//   onefile read FILE THREADS
//   onefile pwrite|mmap|populate|direct FILE MIB THREADS
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#define BLK (1ul << 20)
static size_t total; static int threads, fd; static char *map; static const char *mode;
static void *run(void *a) {
  long i = (long)a; size_t per = (total / threads + BLK - 1) / BLK * BLK, from = i * per, to = from + per;
  if (to > total) to = total;
  char *buf; if (posix_memalign((void **)&buf, 4096, BLK)) exit(1);
  memset(buf, (int)i + 1, BLK);
  for (size_t at = from; at < to; at += BLK) {
    size_t n = to - at < BLK ? to - at : BLK;
    if (!strcmp(mode, "mmap")) memcpy(map + at, buf, n);
    else if (!strcmp(mode, "populate")) {
      if (madvise(map + at, n, 23 /* MADV_POPULATE_WRITE */)) { perror("madvise"); exit(1); }
      memcpy(map + at, buf, n);
    }
    else if (!strcmp(mode, "read")) { if (pread(fd, buf, n, at) != (ssize_t)n) { perror("pread"); exit(1); } }
    else if (pwrite(fd, buf, n, at) != (ssize_t)n) { perror("pwrite"); exit(1); }
  }
  free(buf);
  return 0;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int c, char **v) {
  if (c < 4) { fprintf(stderr, "usage: onefile read FILE THREADS | onefile pwrite|mmap|populate|direct FILE MIB THREADS\n"); return 2; }
  mode = v[1]; const char *path = v[2];
  int reading = !strcmp(mode, "read");
  if (reading) {
    threads = atoi(v[3]); fd = open(path, O_RDONLY);
    struct stat st; if (fd < 0 || fstat(fd, &st)) { perror(path); return 1; }
    total = st.st_size;
  } else {
    if (c < 5) return 2;
    total = (size_t)atol(v[3]) << 20; threads = atoi(v[4]);
    unlink(path);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | (!strcmp(mode, "direct") ? O_DIRECT : 0), 0600);
    if (fd < 0) { perror("open"); return 1; }
  }
  if (threads < 1 || threads > 1024) return 2;
  double a = now();
  if (!strcmp(mode, "mmap") || !strcmp(mode, "populate")) {
    int e = posix_fallocate(fd, 0, total); if (e) { fprintf(stderr, "fallocate: %s\n", strerror(e)); return 1; }
    map = mmap(0, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); if (map == MAP_FAILED) { perror("mmap"); return 1; }
  }
  pthread_t t[1024];
  for (long i = 0; i < threads; i++) pthread_create(&t[i], 0, run, (void *)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], 0);
  if (map) munmap(map, total);
  double b = now();
  close(fd);
  if (!reading) unlink(path);
  printf("%.2f\n", total / (b - a) / 1e9);
  return 0;
}
