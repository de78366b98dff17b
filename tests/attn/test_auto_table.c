/* AUTO's measured table against the measurement it was generated from: the
 * committed sweep (bench/results/.../sweep.txt) is parsed here, on its own,
 * and for every point the order attn_auto_lookup returns must rank the
 * backends by the TFLOP/s the file holds, fastest first. Also: the nearest
 * point is found for shapes between the measured ones, and a card family
 * never measured has no row (AUTO then keeps its fixed order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attn/auto_table.h"

#ifndef SWEEP_FILE
#error "SWEEP_FILE: the committed sweep the table was generated from"
#endif

static const char *const taken[] = {"cudnn", "flash", "efficient", "math"};

static attn_backend backend_of(const char *name) {
  attn_backend b = ATTN_BACKEND_AUTO;
  assert_int_equal(attn_backend_from_name(name, &b), ATTN_STATUS_OK);
  return b;
}

/* One line "D=64 S=1024 causal=False: cudnn=467 flash=374 ...": checks the
 * table's row for that point. Returns 1 if the line was a point. */
static int check_line(const char *line) {
  int d, s;
  char causal[8];
  int used = 0;
  if (sscanf(line, "D=%d S=%d causal=%7[A-Za-z]:%n", &d, &s, causal, &used) != 3) return 0;
  double tf[4] = {-1, -1, -1, -1};
  char name[32];
  double v;
  int n;
  for (const char *p = line + used; sscanf(p, " %31[a-z_]=%lf%n", name, &v, &n) == 2; p += n)
    for (int i = 0; i < 4; i++)
      if (!strcmp(name, taken[i])) tf[i] = v;
  const attn_auto_row *r = attn_auto_lookup(90, d, s, !strcmp(causal, "True"));
  assert_non_null(r);
  assert_int_equal(r->d, d);
  assert_int_equal(r->s, s);
  /* Each backend the file measured is in the row, in descending TFLOP/s. */
  double prev = 1e30;
  for (int k = 0; k < r->n; k++) {
    int i = 0;
    while (i < 4 && backend_of(taken[i]) != r->order[k]) i++;
    assert_true(i < 4);
    printf("D=%d S=%d causal=%s #%d %s %.0f\n", d, s, causal, k, taken[i], tf[i]);
    assert_true(tf[i] >= 0 && tf[i] <= prev);
    prev = tf[i];
  }
  int measured = 0;
  for (int i = 0; i < 4; i++) measured += tf[i] >= 0;
  assert_int_equal(r->n, measured);
  return 1;
}

static void table_ranks_the_sweep(void **state) {
  (void)state;
  FILE *f = fopen(SWEEP_FILE, "r");
  assert_non_null(f);
  char line[512];
  int points = 0;
  while (fgets(line, sizeof line, f)) points += check_line(line);
  fclose(f);
  assert_int_equal(points, (int)attn_auto_table_len);
}

static void nearest_point_and_unknown_cards(void **state) {
  (void)state;
  /* D 96 sits between 64 and 128: |96-64| = |128-96|, either is nearest, both exist. */
  const attn_auto_row *r = attn_auto_lookup(90, 128, 2048, 0);
  assert_non_null(r);
  assert_int_equal(r->d, 128);
  assert_int_equal(r->s, 4096); /* log2 2048 is 1 from 4096, 3 from 16384 */
  r = attn_auto_lookup(90, 256, 100000, 1);
  assert_non_null(r);
  assert_int_equal(r->d, 256);
  assert_int_equal(r->causal, 1);
  assert_null(attn_auto_lookup(80, 128, 4096, 0)); /* an A100 was never measured */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_ranks_the_sweep),
      cmocka_unit_test(nearest_point_and_unknown_cards),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
