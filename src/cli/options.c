/* Option parsing for the problem and measurement options every subcommand
 * shares. Each bad value gets one line: what was wrong, what is accepted. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

__attribute__((format(printf, 1, 0))) static void vreport(const char *fmt, va_list ap) {
  fputs("attnprof: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  return CLI_USAGE;
}

int cli_failure(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(fmt, ap);
  va_end(ap);
  return CLI_FAILED;
}

int cli_opt_flag(int argc, char **argv, int *i, const char *name) {
  (void)argc;
  return strcmp(argv[*i], name) == 0;
}

int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return 0;
  if (argv[*i][n] == '=') {
    *value = argv[*i] + n + 1;
    return 1;
  }
  if (argv[*i][n] != '\0') return 0;
  if (*i + 1 >= argc) {
    cli_usage_error("%s needs a value", name);
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

/* A positive integer no larger than max, or -1. */
static int64_t parse_count(const char *s, int64_t max) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v <= 0 || v > max) return -1;
  return v;
}

int cli_parse_shape(const char *text, cli_problem *p) {
  int64_t v[4];
  const char *s = text;
  for (int i = 0; i < 4; i++) {
    char part[32];
    size_t n = strcspn(s, "x");
    if (n == 0 || n >= sizeof part || (i < 3 && s[n] != 'x') || (i == 3 && s[n] != '\0')) goto bad;
    memcpy(part, s, n);
    part[n] = '\0';
    if ((v[i] = parse_count(part, (int64_t)1 << 24)) < 0) goto bad;
    s += n + (i < 3);
  }
  p->b = v[0], p->hq = p->hkv = v[1], p->sq = p->sk = v[2], p->d = v[3];
  return 0;
bad:
  cli_usage_error("--shape '%s' is not B x H x S x D: give four positive integers "
                  "(each at most 16777216) joined by 'x', e.g. 8x16x1024x64",
                  text);
  return -1;
}

static int parse_causal(const char *v, cli_problem *p) {
  if (!strcmp(v, "top-left")) p->causal = ATTN_CAUSAL_TOP_LEFT;
  else if (!strcmp(v, "bottom-right")) p->causal = ATTN_CAUSAL_BOTTOM_RIGHT;
  else if (!strcmp(v, "none")) p->causal = ATTN_CAUSAL_NONE;
  else {
    cli_usage_error("--causal=%s: accepted are top-left, bottom-right, none", v);
    return -1;
  }
  return 1;
}

static int parse_mask(const char *v, cli_problem *p) {
  if (!strcmp(v, "bool")) p->mask = ATTN_MASK_BOOL;
  else if (!strcmp(v, "additive")) p->mask = ATTN_MASK_ADDITIVE;
  else if (!strcmp(v, "none")) p->mask = ATTN_MASK_NONE;
  else {
    cli_usage_error("--mask %s: accepted are bool, additive, none", v);
    return -1;
  }
  return 1;
}

static int parse_layout(const char *v, cli_problem *p) {
  if (!strcmp(v, "bhsd")) p->bshd = 0;
  else if (!strcmp(v, "bshd")) p->bshd = 1;
  else {
    cli_usage_error("--layout %s: accepted are bhsd, bshd", v);
    return -1;
  }
  return 1;
}

static int parse_device(const char *v, cli_problem *p) {
  char *end;
  long n;
  if (!strcmp(v, "cpu")) return p->device = ATTN_DEVICE_CPU, 1;
  if (!strcmp(v, "cuda")) return p->device = 0, 1;
  if (!strncmp(v, "cuda:", 5) && (n = strtol(v + 5, &end, 10), end != v + 5 && !*end) && n >= 0 &&
      n < 64)
    return p->device = (int)n, 1;
  cli_usage_error("--device %s: accepted are cpu, cuda, cuda:N", v);
  return -1;
}

/* --copy-bw GBPS, --peak-tflops TFLOPS: a positive figure. */
static int parse_roof(const char *name, const char *v, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (end == v || *end || !(*out > 0) || *out > 1e9)
    return cli_usage_error("%s %s: give a positive number (GB/s or TFLOP/s)", name, v), -1;
  return 1;
}

static int parse_int_opt(const char *name, const char *v, int64_t max, int64_t *out) {
  int64_t n = parse_count(v, max);
  if (n < 0) {
    cli_usage_error("%s %s: give a positive integer up to %" PRId64, name, v, max);
    return -1;
  }
  *out = n;
  return 1;
}

/* "--heads 32/8": query heads / key-value heads ("32" alone: both). */
static int parse_heads(const char *v, cli_problem *p) {
  char *end;
  long long hq = strtoll(v, &end, 10), hkv = hq;
  if (end != v && *end == '/') hkv = strtoll(end + 1, &end, 10);
  if (end == v || *end || hq < 1 || hkv < 1 || hq > 65536 || hq % hkv)
    return cli_usage_error("--heads %s: give Q or Q/KV head counts, Q a multiple of KV "
                           "(e.g. 32/8)",
                           v),
           -1;
  p->hq = hq, p->hkv = hkv;
  return 1;
}

int cli_parse_problem_opt(int argc, char **argv, int *i, cli_problem *p) {
  const char *v;
  int r;
  if ((r = cli_opt_value(argc, argv, i, "--shape", &v)))
    return r < 0 ? r : cli_parse_shape(v, p) ? -1 : 1;
  if ((r = cli_opt_value(argc, argv, i, "--sk", &v)))
    return r < 0 ? r : parse_int_opt("--sk", v, 1 << 24, &p->sk);
  if ((r = cli_opt_value(argc, argv, i, "--kv-heads", &v)))
    return r < 0 ? r : parse_int_opt("--kv-heads", v, 1 << 16, &p->hkv);
  if ((r = cli_opt_value(argc, argv, i, "--dtype", &v)))
    return r < 0                                ? r
           : attn_dtype_from_name(v, &p->dtype) ? (cli_usage_error("%s", attn_last_error()), -1)
                                                : 1;
  if (cli_opt_flag(argc, argv, i, "--causal")) return p->causal = ATTN_CAUSAL_TOP_LEFT, 1;
  if (!strncmp(argv[*i], "--causal=", 9)) return parse_causal(argv[*i] + 9, p);
  if ((r = cli_opt_value(argc, argv, i, "--mask", &v))) return r < 0 ? r : parse_mask(v, p);
  if ((r = cli_opt_value(argc, argv, i, "--layout", &v))) return r < 0 ? r : parse_layout(v, p);
  if ((r = cli_opt_value(argc, argv, i, "--device", &v))) return r < 0 ? r : parse_device(v, p);
  if (cli_opt_flag(argc, argv, i, "--lse")) return p->want_lse = 1, 1;
  if ((r = cli_opt_value(argc, argv, i, "--scale", &v))) {
    char *end;
    if (r < 0) return r;
    p->scale = strtod(v, &end);
    if (end == v || *end || !(p->scale > 0) || p->scale > 1e30)
      return cli_usage_error("--scale %s: give a positive number", v), -1;
    return 1;
  }
  /* A decode problem as a serving engineer writes it: --batch 16 --heads 32/8
   * --new-tokens 1 --kv-len 32768 --page-size 16 (K/V in a paged cache). */
  if ((r = cli_opt_value(argc, argv, i, "--batch", &v)))
    return r < 0 ? r : parse_int_opt("--batch", v, 1 << 24, &p->b);
  if ((r = cli_opt_value(argc, argv, i, "--new-tokens", &v)))
    return r < 0 ? r : parse_int_opt("--new-tokens", v, 1 << 24, &p->sq);
  if ((r = cli_opt_value(argc, argv, i, "--kv-len", &v)))
    return r < 0 ? r : parse_int_opt("--kv-len", v, 1 << 24, &p->sk);
  if ((r = cli_opt_value(argc, argv, i, "--page-size", &v)))
    return r < 0 ? r : parse_int_opt("--page-size", v, 1 << 20, &p->page_size);
  if ((r = cli_opt_value(argc, argv, i, "--heads", &v))) return r < 0 ? r : parse_heads(v, p);
  if ((r = cli_opt_value(argc, argv, i, "--seed", &v))) {
    int64_t s;
    if (r < 0 || parse_int_opt("--seed", v, INT64_MAX, &s) < 0) return -1;
    p->seed = (uint64_t)s;
    return 1;
  }
  return 0;
}

int cli_parse_measure_opt(int argc, char **argv, int *i, cli_measure_opts *m) {
  const char *v;
  int64_t n;
  int r;
  if ((r = cli_opt_value(argc, argv, i, "--iters", &v))) {
    if (r < 0 || parse_int_opt("--iters", v, 1000000, &n) < 0) return -1;
    return m->iters = (int)n, 1;
  }
  if ((r = cli_opt_value(argc, argv, i, "--warmup", &v))) {
    if (r < 0) return r;
    if (!strcmp(v, "0")) return m->warmup = 0, 1;
    if (parse_int_opt("--warmup", v, 1000000, &n) < 0) return -1;
    return m->warmup = (int)n, 1;
  }
  if ((r = cli_opt_value(argc, argv, i, "--threads", &v))) {
    if (r < 0 || parse_int_opt("--threads", v, 4096, &n) < 0) return -1;
    return m->threads = (int)n, 1;
  }
  if ((r = cli_opt_value(argc, argv, i, "--flash-kernel", &v))) {
    static const char *const kernels[] = {"auto", "mma_sync", "wgmma", "ws"};
    if (r < 0) return r;
    for (int k = 0; k < 4; k++)
      if (!strcmp(v, kernels[k])) return m->flash_kernel = k, 1;
    cli_usage_error("--flash-kernel %s: accepted are auto, mma_sync, wgmma, ws", v);
    return -1;
  }
  if (cli_opt_flag(argc, argv, i, "--cuda-graphs")) return m->cuda_graphs = 1, 1;
  if ((r = cli_opt_value(argc, argv, i, "--trace", &v))) return r < 0 ? r : (m->trace_path = v, 1);
  if ((r = cli_opt_value(argc, argv, i, "--format", &v))) {
    if (r < 0) return r;
    if (prof_trace_format_from_name(v, &m->trace_format))
      return cli_usage_error("--format: unknown trace format '%s' (json, json.gz or pftrace)", v),
             -1;
    return 1;
  }
  if ((r = cli_opt_value(argc, argv, i, "--expect", &v)))
    return r < 0 ? r : (m->expect_text = v, 1);
  if (cli_opt_flag(argc, argv, i, "--json")) return m->json = 1, 1;
  if ((r = cli_opt_value(argc, argv, i, "--copy-bw", &v)))
    return r < 0 ? r : parse_roof("--copy-bw", v, &m->copy_bw);
  if ((r = cli_opt_value(argc, argv, i, "--peak-tflops", &v)))
    return r < 0 ? r : parse_roof("--peak-tflops", v, &m->peak_tflops);
  if (cli_opt_flag(argc, argv, i, "--no-check")) return m->check = 0, 1;
  if (cli_opt_flag(argc, argv, i, "--force")) return m->force = 1, 1;
  return 0;
}

void cli_problem_defaults(cli_problem *p) {
  /* On the CPU a smaller default than the GPU shape (8x16x1024x64), so that a
   * compare of four backends plus the fp64 reference takes seconds. */
  *p = (cli_problem){.b = 1,
                     .hq = 8,
                     .hkv = 8,
                     .sq = 1024,
                     .sk = 1024,
                     .d = 64,
                     .dtype = ATTN_DTYPE_BF16,
                     .causal = ATTN_CAUSAL_TOP_LEFT,
                     .mask = ATTN_MASK_NONE,
                     .device = ATTN_DEVICE_CPU,
                     .seed = 1};
}

void cli_measure_defaults(cli_measure_opts *m) {
  *m = (cli_measure_opts){.iters = 20, .warmup = 2, .profiled = 3, .check = 1, .flash_kernel = -1};
}

void cli_problem_describe(const cli_problem *p, char *buf, size_t len) {
  static const char *const causal[] = {"", " causal(top-left)", " causal(bottom-right)"};
  static const char *const mask[] = {"", " mask=bool", " mask=additive"};
  int n = snprintf(buf, len,
                   "B=%" PRId64 " Hq=%" PRId64 " Hkv=%" PRId64 " Sq=%" PRId64 " Sk=%" PRId64
                   " D=%" PRId64 " %s%s%s%s",
                   p->b, p->hq, p->hkv, p->sq, p->sk, p->d, attn_dtype_name(p->dtype),
                   causal[p->page_size > 0 && p->causal ? 2 : p->causal], mask[p->mask],
                   p->bshd ? " layout=bshd" : "");
  if (p->page_size > 0 && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " paged(page=%" PRId64 ")", p->page_size);
}

char *cli_expect_text(const char *value) {
  if (value[0] != '@') return strdup(value);
  FILE *f = fopen(value + 1, "r");
  if (!f) {
    cli_usage_error("--expect %s: cannot read '%s': %s", value, value + 1, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *bigger = cap < (1u << 20) ? realloc(buf, cap *= 2) : NULL;
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (!buf) {
    cli_usage_error("--expect %s: file too large (at most 1 MiB)", value);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}
