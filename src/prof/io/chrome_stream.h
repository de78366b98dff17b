/* The streamed Chrome/Kineto trace: events written chunk by chunk as a
 * collector produces them, so a program of any length is traced in bounded
 * memory. The file has the same schema as prof_write_chrome_trace's (events
 * through chrome_write_event, the same metadata rows), with two differences
 * a reader never notices: events are in arrival order, and the dropped-event
 * count comes after traceEvents (it is known only at the end).
 *
 * Flows need both ends in one chunk; a launch call whose GPU activity has not
 * arrived yet (or the reverse) is held back for up to four chunks, so arrows
 * survive chunk boundaries. After each chunk the file is flushed and its
 * length noted (chrome_stream_safe_offset): if the program dies without
 * closing the stream, prof_chrome_trace_repair cuts the file there and closes
 * the JSON, so everything flushed is kept. */
#ifndef ATTNPROF_SRC_PROF_CHROME_STREAM_H
#define ATTNPROF_SRC_PROF_CHROME_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/prof.h"

typedef struct chrome_stream chrome_stream;

/* Creates path (truncating it). base_epoch_ns: baseTimeNanoseconds; offset:
 * epoch ns minus event-clock ns. NULL with why on failure. */
chrome_stream *chrome_stream_open(const char *path, int64_t base_epoch_ns, int64_t offset,
                                  char *why, size_t why_len);
/* Writes the chunk's events (and devices, the first time); takes and
 * destroys chunk. 0, or an errno value (the stream stays usable for close). */
int chrome_stream_chunk(chrome_stream *s, prof_trace *chunk);
/* The length of the file up to the end of the last chunk written whole. */
int64_t chrome_stream_safe_offset(const chrome_stream *s);
int64_t chrome_stream_events(const chrome_stream *s);
int64_t chrome_stream_dropped(const chrome_stream *s);
/* Writes the held events, the metadata rows and the tail, and closes.
 * extra_dropped adds to the chunks' own dropped counts. Frees s. 0 or errno. */
int chrome_stream_close(chrome_stream *s, int64_t extra_dropped, int64_t pid, const char *process);
/* Closes the file as it stands, without the tail: what a writer that dies
 * leaves behind (tests of prof_chrome_trace_repair); chrome_stream_close ends
 * here too. Frees s. 0 or the errno of the close. */
int chrome_stream_abandon(chrome_stream *s);
/* Completes a stream its writer never closed: cuts it to safe_offset (0:
 * nothing was written whole) and appends the closing of traceEvents and of
 * the document. 0 or errno. */
/* prof_chrome_trace_repair (prof.h) completes a stream its writer never closed. */

#endif
