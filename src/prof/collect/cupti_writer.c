/* The writer thread (see cupti_writer.h): one FIFO of completed buffers, one
 * thread taking them in order, so chunks reach the sink as before. A forked
 * child has no such thread: there, pushes are refused and the caller
 * completes buffers on CUPTI's thread as without the writer. */
#include "prof/collect/cupti_writer.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct done_buf {
  struct done_buf *next;
  uint8_t *buffer;
  size_t valid, dropped;
} done_buf;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER, idle = PTHREAD_COND_INITIALIZER;
static done_buf *head, **tail = &head;
static int busy, running;
static cupti_writer_fn work;

static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!head) pthread_cond_wait(&queued, &mu);
    done_buf *d = head;
    if (!(head = d->next)) tail = &head;
    busy = 1;
    pthread_mutex_unlock(&mu);
    work(d->buffer, d->valid, d->dropped);
    free(d);
    pthread_mutex_lock(&mu);
    busy = 0;
    if (!head) pthread_cond_broadcast(&idle);
  }
  return NULL;
}

static void in_child(void) { /* the thread was not forked with us */
  running = busy = 0;
  head = NULL;
  tail = &head;
}

int cupti_writer_start(cupti_writer_fn fn) {
  pthread_mutex_lock(&mu);
  if (!running) {
    pthread_t t;
    pthread_attr_t a;
    work = fn;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    running = !pthread_create(&t, &a, writer_main, NULL);
    pthread_attr_destroy(&a);
    if (running) pthread_atfork(NULL, NULL, in_child);
  }
  int ok = running;
  pthread_mutex_unlock(&mu);
  return ok ? 0 : -1;
}

int cupti_writer_push(uint8_t *buffer, size_t valid, size_t dropped) {
  done_buf *d = running ? malloc(sizeof *d) : NULL;
  if (!d) return -1;
  *d = (done_buf){.buffer = buffer, .valid = valid, .dropped = dropped};
  pthread_mutex_lock(&mu);
  int ok = running;
  if (ok) {
    *tail = d;
    tail = &d->next;
    pthread_cond_signal(&queued);
  }
  pthread_mutex_unlock(&mu);
  if (!ok) free(d);
  return ok ? 0 : -1;
}

void cupti_writer_wait_idle(void) {
  pthread_mutex_lock(&mu);
  while (running && (head || busy)) pthread_cond_wait(&idle, &mu);
  pthread_mutex_unlock(&mu);
}

int cupti_writer_pending(void) {
  pthread_mutex_lock(&mu);
  int n = busy;
  for (done_buf *d = head; d; d = d->next) n++;
  pthread_mutex_unlock(&mu);
  return n;
}
