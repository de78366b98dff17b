/* attnprof_spawn FD CMD [ARGS...]: runs CMD as its child and writes
 * "STATUS MAXRSS_KIB\n" (the wait status and the child's ru_maxrss) to FD.
 *
 * Why a helper: Linux keeps a process's peak RSS across exec, so a program
 * forked straight from attnprof reports attnprof's memory when that is the
 * larger. Forked from this small program instead, the child starts from a
 * few hundred kB, and its ru_maxrss is the traced program's own peak.
 * Links nothing but libc. SIGINT/SIGQUIT are ignored here, as in attnprof:
 * a Ctrl-C is the program's to handle. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* The injected collector knows the traced process by its pid. */
static void run_child(char **argv) {
  char pid[32];
  if (getenv("ATTNPROF_TRACE_ROOT_PID")) {
    snprintf(pid, sizeof pid, "%lld", (long long)getpid());
    setenv("ATTNPROF_TRACE_ROOT_PID", pid, 1);
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGQUIT, SIG_DFL);
  execvp(argv[0], argv);
  fprintf(stderr, "attnprof: cannot run '%s': %s\n", argv[0], strerror(errno));
  _exit(127);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fputs("usage: attnprof_spawn FD CMD [ARGS...] (run by attnprof trace)\n", stderr);
    return 2;
  }
  int fd = atoi(argv[1]);
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "attnprof: cannot start the program: %s\n", strerror(errno));
    return 127;
  }
  if (pid == 0) {
    close(fd);
    run_child(argv + 2);
  }
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
  char line[64];
  int n = snprintf(line, sizeof line, "%d %ld\n", status, ru.ru_maxrss);
  if (write(fd, line, (size_t)n) != n) return 1;
  return 0;
}
