/* Completed CUPTI buffers handed from CUPTI's worker thread to a thread of
 * our own (ATTNPROF_CUPTI_WRITER=thread; bench/TRACE_COST.md): converting and
 * writing a buffer then never holds CUPTI's worker, which also moves kernel
 * records off the GPU while the program launches. Shared by cupti_buffers.c. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_WRITER_H
#define ATTNPROF_SRC_PROF_CUPTI_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* dropped: the records CUPTI said it dropped, asked on its own thread. */
typedef void (*cupti_writer_fn)(uint8_t *buffer, size_t valid, size_t dropped);

/* Starts the thread once, which calls fn for each buffer pushed, in order.
 * Returns 0, or -1 when no thread could be started (push then refuses). */
int cupti_writer_start(cupti_writer_fn fn);
/* Queues a completed buffer: 0, or -1 when there is no thread (or no memory):
 * the caller then completes it itself. */
int cupti_writer_push(uint8_t *buffer, size_t valid, size_t dropped);
/* Returns once every buffer pushed so far has been completed. Not under a
 * lock that fn takes. */
void cupti_writer_wait_idle(void);
/* Buffers queued or being completed now. */
int cupti_writer_pending(void);

#endif
