/* Internals of the Perfetto (protobuf) trace writer and reader.
 *
 * The file is a perfetto.protos.Trace: a run of TracePackets on one packet
 * sequence. Event names, categories and arg names are interned (sent once in
 * interned_data, then referred to by number), and packets are written in
 * zlib batches (compressed_packets, Perfetto's own compression), which is
 * what keeps a million launches far below their JSON. The first packet holds
 * the trace's header as Kineto JSON (deviceProperties, baseTimeNanoseconds,
 * attnprof_version) in a Chrome metadata entry; the last says the trace
 * ended (PFT_META_END), so a cut file is told from a whole one. Every
 * lane (pid, tid) is a thread track under a process track, as the JSON's
 * lanes; an event is a slice (BEGIN and END packets) with the same args as
 * the JSON (trace_args.c); a launch and its GPU activity share a flow id. */
#ifndef ATTNPROF_SRC_PROF_PFTRACE_H
#define ATTNPROF_SRC_PROF_PFTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnprof/prof.h"
#include "prof/model/map.h"
#include "prof/io/proto/perfetto_trace.pb-c.h"

typedef Attnprof__Pftrace__Trace pft_trace_msg;
typedef Attnprof__Pftrace__TracePacket pft_packet;
typedef Attnprof__Pftrace__TrackEvent pft_event;
typedef Attnprof__Pftrace__DebugAnnotation pft_annot;
typedef Attnprof__Pftrace__InternedData pft_interned;

#define PFT_SEQUENCE 1                    /* the one packet sequence we write */
#define PFT_SEQ_CLEARED 1                 /* SEQ_INCREMENTAL_STATE_CLEARED */
#define PFT_SEQ_NEEDS_STATE 2             /* SEQ_NEEDS_INCREMENTAL_STATE */
#define PFT_META_HEADER "attnprof_header" /* json_value: the Kineto header */
#define PFT_META_END "attnprof_end"       /* int_value: events written */
/* zlib batches of about this much packet data; a reader refuses batches that
 * inflate past PFT_MAX_BATCH. */
enum { PFT_BATCH = 1 << 20, PFT_MAX_BATCH = 64 << 20 };

/* ---- writing (pftrace_out.c) ---- */

typedef struct {
  unsigned char *p;
  size_t len, cap;
} pft_buf;

typedef struct {
  FILE *f;
  int err;         /* errno of the first failure */
  int compress;    /* batches in compressed_packets; 0: plain packets */
  pft_buf batch;   /* framed packets not yet written */
  pft_buf scratch; /* one packet, framed */
  pft_buf zbuf;    /* the compressed batch */
  uint64_t next_iid, next_uuid;
  prof_map interned;     /* (kind, key) -> iid */
  prof_map tracks;       /* (pid, tid) -> uuid; (pid, PFT_PROCESS_TID) -> process uuid */
  pft_interned *pending; /* new interned entries for the next event packet */
  struct pft_new *nw;    /* their storage */
  struct pft_args *args; /* the event's debug annotations */
  int first_packet;
  const prof_trace *t; /* names the processes (prof_trace_process_*) */
  int64_t offset;      /* event ns + offset = epoch ns */
  int64_t events;
} pft_writer;

/* f: opened for writing; compress: use zlib batches. 0 or errno. */
int pft_writer_init(pft_writer *w, FILE *f, int compress);
/* The header packet: the Kineto JSON of the trace's devices, base time,
 * version and dropped count (from t). */
void pft_write_header(pft_writer *w, const prof_trace *t, int64_t base_epoch);
/* The trace's own process (prof_trace_process_id), named even when it has
 * no events, as the JSON's metadata rows name it. */
void pft_describe_own_process(pft_writer *w);
/* The BEGIN packet of event e (at its start), with args and flow ids
 * (0 = none), describing its track first if new. */
void pft_write_begin(pft_writer *w, const prof_trace *t, const prof_event *e, uint64_t flow_out,
                     uint64_t flow_in);
/* The END packet of e. */
void pft_write_end(pft_writer *w, const prof_event *e);
/* The end marker, then the last batch. 0 or errno. */
int pft_writer_finish(pft_writer *w);
void pft_writer_free(pft_writer *w);

/* The whole trace t into f (pftrace_writer.c). 0 or errno. */
int pft_write_trace_to(const prof_trace *t, FILE *f, int compress);

/* ---- reading (pftrace_reader.c) ---- */

/* Whether the first bytes of a file are a Perfetto trace rather than JSON. */
int pft_sniff(const unsigned char *head, size_t n);
/* f after its first n_head bytes, which are head. */
attn_status pft_read_file(FILE *f, const unsigned char *head, size_t n_head, const char *what,
                          prof_trace **out, prof_read_stats *stats);
attn_status pft_read_buffer(const void *data, size_t len, prof_trace **out, prof_read_stats *stats);

#endif
