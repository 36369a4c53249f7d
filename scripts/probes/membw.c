// The memory ceiling: N threads each copy their own 256 MiB buffer 8 times; prints the bytes
// copied per second (GB/s). Part of scripts/cores-bench.sh.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define SZ (256ul << 20)
#define REPS 8
static pthread_barrier_t bar;
static void *run(void *a) {
  (void)a;
  char *s = malloc(SZ), *d = malloc(SZ);
  if (!s || !d) { perror("malloc"); exit(1); }
  memset(s, 1, SZ); memset(d, 2, SZ);
  pthread_barrier_wait(&bar);
  for (int i = 0; i < REPS; i++) { memcpy(d, s, SZ); __asm__ volatile("" :: "r"(d) : "memory"); }
  pthread_barrier_wait(&bar);
  free(s); free(d);
  return 0;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int c, char **v) {
  if (c != 2) { fprintf(stderr, "usage: membw THREADS\n"); return 2; }
  int n = atoi(v[1]); pthread_t t[1024];
  if (n < 1 || n > 1024) return 2;
  pthread_barrier_init(&bar, 0, n + 1);
  for (int i = 0; i < n; i++) pthread_create(&t[i], 0, run, 0);
  pthread_barrier_wait(&bar); double a = now(); pthread_barrier_wait(&bar); double b = now();
  for (int i = 0; i < n; i++) pthread_join(t[i], 0);
  printf("%.2f\n", (double)n * REPS * SZ / (b - a) / 1e9);
  return 0;
}
