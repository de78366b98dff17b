/* Replays every file of the fuzzing corpus and every past crash through the
 * fuzzing harness, in normal ctest (and under ASan/UBSan in the sanitizer
 * build): each crash the fuzzer ever found stays fixed. A file named
 * accept-* must be read as a trace, reject-* must be refused; others may go
 * either way, they only must not crash. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_harness.h"

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0, got;
  unsigned char *buf = malloc(cap);
  while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      unsigned char *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  fclose(f);
  *n = len;
  return buf;
}

/* 0 when every file behaved; prints each one that did not. */
static int replay_dir(const char *dir, int *files) {
  DIR *d = opendir(dir);
  if (!d) return fprintf(stderr, "replay: cannot open %s\n", dir), 1;
  int bad = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = 0;
    unsigned char *data = slurp(path, &n);
    if (!data) {
      fprintf(stderr, "replay: cannot read %s\n", path);
      bad++;
      continue;
    }
    int read = attnprof_fuzz_one(data, n);
    free(data);
    (*files)++;
    int want = !strncmp(e->d_name, "accept-", 7) ? 1 : !strncmp(e->d_name, "reject-", 7) ? 0 : read;
    if (read != want) {
      fprintf(stderr, "replay: %s: read as a trace: %d, expected %d\n", path, read, want);
      bad++;
    }
  }
  closedir(d);
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0, files = 0;
  for (int i = 1; i < argc; i++) bad += replay_dir(argv[i], &files);
  printf("replay: %d files, %d wrong\n", files, bad);
  return bad ? 1 : 0;
}
