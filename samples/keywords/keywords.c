/* keywords: a nested keyword parser in the spirit of FairFuzz's Figure 1
 * (libxml2's attribute-list declaration).  Every keyword is compared byte by
 * byte with unrolled CMPn tests, so each matched byte is a new branch; reaching
 * an attribute type means first producing "<!ATTLIST", which plain AFL rarely
 * does. */
#include <stdio.h>
#include <string.h>

#define MAX_INPUT 4096

/* Byte-by-byte keyword tests, unrolled like libxml2's CMPn macros: every byte
 * of every keyword is a branch of its own, so each matched byte is progress a
 * coverage-guided fuzzer can see. */
#define CMP2(p, a, b) ((p)[0] == (a) && (p)[1] == (b))
#define CMP3(p, a, b, c) (CMP2(p, a, b) && (p)[2] == (c))
#define CMP4(p, a, b, c, d) (CMP3(p, a, b, c) && (p)[3] == (d))
#define CMP5(p, a, b, c, d, e) (CMP4(p, a, b, c, d) && (p)[4] == (e))
#define CMP6(p, a, b, c, d, e, f) (CMP5(p, a, b, c, d, e) && (p)[5] == (f))
#define CMP7(p, a, b, c, d, e, f, g) (CMP6(p, a, b, c, d, e, f) && (p)[6] == (g))
#define CMP8(p, a, b, c, d, e, f, g, h) (CMP7(p, a, b, c, d, e, f, g) && (p)[7] == (h))
#define CMP9(p, a, b, c, d, e, f, g, h, i) (CMP8(p, a, b, c, d, e, f, g, h) && (p)[8] == (i))
/* At least n bytes left (the input buffer is zero-padded, this keeps reads in it). */
#define LEFT(n) (end - cursor >= (n))

static const char *cursor;
static const char *end;

/* Consume n bytes and name what was recognised. */
static const char *take(int n, const char *name) {
  cursor += n;
  return name;
}

static void skip_blanks(void) {
  while (cursor < end && (*cursor == ' ' || *cursor == '\t' || *cursor == '\n')) cursor++;
}

static const char *attribute_type(void) {
  if (LEFT(5) && CMP5(cursor, 'C', 'D', 'A', 'T', 'A')) return take(5, "CDATA");
  if (LEFT(6) && CMP6(cursor, 'I', 'D', 'R', 'E', 'F', 'S')) return take(6, "IDREFS");
  if (LEFT(5) && CMP5(cursor, 'I', 'D', 'R', 'E', 'F')) return take(5, "IDREF");
  if (LEFT(2) && CMP2(cursor, 'I', 'D')) return take(2, "ID");
  if (LEFT(6) && CMP6(cursor, 'E', 'N', 'T', 'I', 'T', 'Y')) return take(6, "ENTITY");
  if (LEFT(8) && CMP8(cursor, 'E', 'N', 'T', 'I', 'T', 'I', 'E', 'S')) return take(8, "ENTITIES");
  if (LEFT(8) && CMP8(cursor, 'N', 'M', 'T', 'O', 'K', 'E', 'N', 'S')) return take(8, "NMTOKENS");
  if (LEFT(7) && CMP7(cursor, 'N', 'M', 'T', 'O', 'K', 'E', 'N')) return take(7, "NMTOKEN");
  return NULL;
}

static const char *default_declaration(void) {
  if (LEFT(9) && CMP9(cursor, '#', 'R', 'E', 'Q', 'U', 'I', 'R', 'E', 'D')) return take(9, "REQUIRED");
  if (LEFT(8) && CMP8(cursor, '#', 'I', 'M', 'P', 'L', 'I', 'E', 'D')) return take(8, "IMPLIED");
  if (LEFT(6) && CMP6(cursor, '#', 'F', 'I', 'X', 'E', 'D')) {
    cursor += 6;
    if (cursor < end && *cursor != ' ') return "FIXED without a blank";
    return "FIXED";
  }
  return "none";
}

static int parse_attlist(void) {
  int attributes = 0;
  while (cursor < end && *cursor != '>') {
    skip_blanks();
    const char *type = attribute_type();
    if (!type) {
      cursor++;
      continue;
    }
    skip_blanks();
    printf("attribute %d: %s, default %s\n", ++attributes, type, default_declaration());
  }
  return attributes;
}

int main(int argc, char **argv) {
  static char input[MAX_INPUT];
  FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!in) {
    perror("keywords");
    return 2;
  }
  size_t len = fread(input, 1, sizeof input, in);
  cursor = input;
  end = input + len;
  int declarations = 0;
  while (cursor < end) {
    if (LEFT(9) && CMP9(cursor, '<', '!', 'A', 'T', 'T', 'L', 'I', 'S', 'T')) {
      cursor += 9;
      declarations++;
      printf("ATTLIST with %d attributes\n", parse_attlist());
    } else if (LEFT(9) && CMP9(cursor, '<', '!', 'D', 'O', 'C', 'T', 'Y', 'P', 'E')) {
      cursor += 9;
      puts("DOCTYPE");
    } else {
      cursor++;
    }
  }
  printf("%d declarations in %zu bytes\n", declarations, len);
  return declarations > 0;
}
