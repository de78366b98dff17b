/* The writer thread of cupti_writer.c without a GPU: buffers pushed from
 * several threads come out once each, each thread's in its order; waiting
 * for idle returns only when every pushed buffer is done; a forked child
 * (no writer thread) refuses pushes so its caller completes them itself. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "prof/collect/cupti_writer.h"

enum { THREADS = 4, PER_THREAD = 200 };

static uint8_t slots[THREADS][PER_THREAD];
static int seen[THREADS][PER_THREAD], last_index[THREADS];
static size_t dropped_sum;
static int out_of_order, done;

/* Slow on purpose (a writer behind the pushes): 50 us a buffer. */
static void complete(uint8_t *buffer, size_t valid, size_t dropped) {
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
  size_t at = (size_t)(buffer - &slots[0][0]);
  int t = (int)(at / PER_THREAD), i = (int)(at % PER_THREAD);
  seen[t][i]++;
  if (i < last_index[t]) out_of_order++;
  last_index[t] = i;
  dropped_sum += dropped;
  done += valid == 64;
}

static void *pusher(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++)
    if (cupti_writer_push(&slots[t][i], 64, 1)) complete(&slots[t][i], 64, 1);
  return NULL;
}

static void every_buffer_once_in_order(void **state) {
  (void)state;
  assert_int_equal(cupti_writer_start(complete), 0);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, pusher, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  cupti_writer_wait_idle();
  /* Read only after the wait: the writer thread wrote these. */
  assert_int_equal(done, THREADS * PER_THREAD);
  assert_int_equal(cupti_writer_pending(), 0);
  assert_int_equal(out_of_order, 0);
  assert_int_equal((int)dropped_sum, THREADS * PER_THREAD);
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PER_THREAD; i++) assert_int_equal(seen[t][i], 1);
}

static void forked_child_refuses(void **state) {
  (void)state;
  assert_int_equal(cupti_writer_start(complete), 0);
  pid_t pid = fork();
  if (pid == 0) _exit(cupti_writer_push(&slots[0][0], 64, 0) == -1 && cupti_writer_pending() == 0 ? 0 : 1);
  int status = -1;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  /* The parent's thread still takes buffers. */
  int before = done;
  assert_int_equal(cupti_writer_push(&slots[1][0], 64, 0), 0);
  cupti_writer_wait_idle();
  assert_int_equal(done, before + 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_buffer_once_in_order),
      cmocka_unit_test(forked_child_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
