/* attnprof cp's launcher: a private folder for NCCL's id and the ranks'
 * results, one child per rank (fork, exec of this program) with the rank in
 * its environment and NCCL_NVLS_ENABLE=0, then the run's row and, with
 * --trace, the merged timeline (prof_merge) and the overlap table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnprof/prof/ranks.h"
#include "cli/cp_launch.h"

void cli_cp_print_header(void) {
  printf("%-10s  %4s  %9s  %10s  %12s  %10s  %10s\n", "variant", "gpus", "S", "ms", "TFLOP/s/GPU",
         "err_ref", "err_flash");
}

static pid_t spawn(int argc, char **argv, int rank, int gpus, const char *dir) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  char r[16], n[16];
  snprintf(r, sizeof r, "%d", rank);
  snprintf(n, sizeof n, "%d", gpus);
  setenv("ATTNPROF_CP_RANK", r, 1);
  setenv("ATTNPROF_CP_NRANKS", n, 1);
  setenv("ATTNPROF_CP_DIR", dir, 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off */
  char **av = calloc((size_t)argc + 3, sizeof *av);
  if (!av) _exit(CLI_FAILED);
  av[0] = "attnprof";
  av[1] = "cp";
  for (int i = 0; i < argc; i++) av[i + 2] = argv[i];
  execv("/proc/self/exe", av);
  fprintf(stderr, "attnprof: error: cp: cannot run rank %d: %s\n", rank, strerror(errno));
  _exit(CLI_FAILED);
}

/* The row over all ranks: the slowest rank's time, the worst errors. */
static void print_row(const char *dir, int gpus, int row_only) {
  double ms = 0, tf = 1e300, eref = 0, efl = 0;
  char variant[32] = "?";
  long long s = 0;
  for (int r = 0; r < gpus; r++) {
    char path[600];
    snprintf(path, sizeof path, "%s/rank%d.result", dir, r);
    FILE *f = fopen(path, "r");
    double m, t, e1, e2;
    char v[32];
    long long sl;
    if (!f || fscanf(f, "%31s %lld %lf %lf %lf %lf", v, &sl, &m, &t, &e1, &e2) != 6) {
      if (f) fclose(f);
      fprintf(stderr, "attnprof: error: cp: rank %d left no result\n", r);
      return;
    }
    fclose(f);
    snprintf(variant, sizeof variant, "%s", v);
    s = sl;
    ms = m > ms ? m : ms;
    tf = t < tf ? t : tf;
    eref = e1 > eref || e1 != e1 ? e1 : eref;
    efl = e2 > efl || e2 != e2 ? e2 : efl;
  }
  if (!row_only) cli_cp_print_header();
  printf("%-10s  %4d  %9lld  %10.3f  %12.1f  %10.2g  %10.2g\n", variant, gpus, s, ms, tf, eref,
         efl);
}

static int merge_traces(const char *trace_dir, int gpus) {
  prof_trace **t = calloc((size_t)gpus, sizeof *t);
  prof_merge_input *info = calloc((size_t)gpus, sizeof *info);
  int rc = t && info ? CLI_OK : CLI_FAILED;
  for (int r = 0; rc == CLI_OK && r < gpus; r++) {
    char path[600];
    snprintf(path, sizeof path, "%s/rank%d.json", trace_dir, r);
    if (prof_read_chrome_trace(path, &t[r], NULL) != ATTN_STATUS_OK)
      rc = cli_failure("cp: cannot read rank %d's trace: %s", r, attn_last_error());
  }
  prof_trace *m = NULL;
  if (rc == CLI_OK && prof_merge(t, (size_t)gpus, info, &m))
    rc = cli_failure("cp: merge: %s", attn_last_error());
  char path[600];
  snprintf(path, sizeof path, "%s/merged.json", trace_dir);
  if (rc == CLI_OK && prof_write_chrome_trace(m, path) != ATTN_STATUS_OK)
    rc = cli_failure("cp: cannot write %s: %s", path, attn_last_error());
  prof_overlap_row *rows = NULL;
  int64_t n = -1;
  if (rc == CLI_OK && prof_overlap_summarize(m, &rows, &n)) n = -1;
  if (n >= 0) {
    printf("\nmerged trace: %s (rank clocks shifted by", path);
    for (int r = 0; r < gpus; r++) printf(" %+lld", (long long)info[r].offset_ns);
    printf(" ns)\n");
    for (int r = 0; r < gpus; r++)
      if (info[r].why[0]) printf("rank %d: %s\n", r, info[r].why);
    printf("compute and communication per rank (device) and step:\n");
    prof_print_overlap(stdout, rows, n);
  }
  free(rows);
  prof_trace_destroy(m);
  for (int r = 0; t && r < gpus; r++) prof_trace_destroy(t[r]);
  free(t);
  free(info);
  return rc;
}

int cli_cp_launch(int argc, char **argv, int gpus, attn_cp_variant variant, const char *trace_dir,
                  int row_only) {
  char dir[] = "/tmp/attnprof-cp-XXXXXX";
  if (!mkdtemp(dir)) return cli_failure("cp: cannot make a private folder: %s", strerror(errno));
  fflush(stdout);
  pid_t *pids = calloc((size_t)gpus, sizeof *pids);
  int worst = pids ? CLI_OK : CLI_FAILED;
  for (int r = 0; pids && r < gpus; r++)
    if ((pids[r] = spawn(argc, argv, r, gpus, dir)) < 0)
      worst = cli_failure("cp: fork: %s", strerror(errno));
  for (int r = 0; pids && r < gpus; r++) {
    int status = 0;
    if (pids[r] > 0 && waitpid(pids[r], &status, 0) == pids[r]) {
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : CLI_FAILED;
      worst = code > worst ? code : worst;
    }
  }
  free(pids);
  if (worst == CLI_OK) print_row(dir, gpus, row_only);
  if (worst == CLI_OK && trace_dir) worst = merge_traces(trace_dir, gpus);
  char path[600];
  for (int r = 0; r < gpus; r++) {
    snprintf(path, sizeof path, "%s/rank%d.result", dir, r);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/nccl-id", dir);
  unlink(path);
  rmdir(dir);
  (void)variant;
  return worst;
}
