/* boundaries: a record interpreter whose bugs sit exactly on comparison
 * boundaries and have no branch of their own, for measuring what labels add.
 * Edge coverage sees nothing when an operand reaches its boundary; a
 * weak-mutation label (`a <= 100` against `a < 100`: fires at a == 100) does,
 * so a labelled campaign keeps the input that reaches one boundary and can go
 * on from it to the next.  Input: records of four bytes, `op a b c`; op is
 * taken modulo 5.  Each bug has a triggering input in triggers/:
 *
 *   div-two-boundaries  op 0   a == 100 and b == 50 divide by zero   (SIGFPE)
 *   corner-of-grid      op 1   a == 8 and b == 8 read the NULL cell  (SIGSEGV)
 *   div-three-conds     op 2   a == 200, b >= 100, c == 7            (SIGFPE)
 *   modulo-boundary     op 3   a == 17 takes a remainder by zero     (SIGFPE)
 *   past-the-array      op 4   a == 10 writes over a pointer         (SIGSEGV)
 *
 * With BOUNDARIES_TRACE set, each record's op goes to stderr before it runs,
 * so a crash's last line names its bug (bench/bugs_bench.py sorts crashes so).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define GRID 8
#define VALUES 10

static long grid_cells[GRID + 1][GRID + 1];
static long *grid[GRID + 1][GRID + 1]; /* grid[GRID][GRID] stays NULL */
static int trace;

static long divide_two(unsigned a, unsigned b, long total) {
  long x = 0, y = 0;
  if (a <= 100) x = 100 - a;
  if (b <= 50) y = 50 - b;
  if (a <= 100 && b <= 50) return total / (x + y); /* BUG: x + y is 0 at both boundaries */
  return total;
}

static long corner(unsigned a, unsigned b) {
  if (a <= GRID && b <= GRID) return *grid[a][b]; /* BUG: GRID is one past the last row */
  return 0;
}

static long divide_three(unsigned a, unsigned b, unsigned c, long total) {
  if (a <= 200 && b >= 100 && c <= 7) /* BUG: zero when a == 200 and c == 7 */
    return total / ((long)(200 - a) * 3 + (long)(7 - c));
  return total;
}

static long modulo(unsigned a, unsigned b) {
  if (a >= 17) return (long)b % (long)(a - 17); /* BUG: a == 17 */
  return b;
}

static struct {
  long v[VALUES];
  long *volatile sum; /* volatile: read back after the store that may overwrite it */
} values;

static long past_the_array(unsigned a, unsigned b, long *sum) {
  values.sum = sum;
  if (a <= VALUES) values.v[a] = (long)b; /* BUG: v[VALUES] is the pointer: it becomes b */
  *values.sum += b;
  return *values.sum;
}

static long run(const unsigned char *r, long total) {
  unsigned op = r[0] % 5, a = r[1], b = r[2], c = r[3];
  if (trace) fprintf(stderr, "op %u\n", op);
  switch (op) {
    case 0: return divide_two(a, b, total);
    case 1: return total + corner(a, b);
    case 2: return divide_three(a, b, c, total);
    case 3: return total + modulo(a, b);
    default: return past_the_array(a, b, &total);
  }
}

int main(int argc, char **argv) {
  FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!in) {
    perror("boundaries");
    return 2;
  }
  trace = getenv("BOUNDARIES_TRACE") != NULL;
  for (int i = 0; i <= GRID; i++)
    for (int j = 0; j <= GRID; j++)
      if (i < GRID || j < GRID) grid[i][j] = &grid_cells[i][j];
  unsigned char record[4];
  long total = 1000;
  int records = 0;
  while (fread(record, 1, sizeof record, in) == sizeof record) {
    total = run(record, total);
    records++;
  }
  printf("%d records, total %ld\n", records, total);
  return 0;
}
