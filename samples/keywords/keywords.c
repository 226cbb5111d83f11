/* keywords: a nested keyword parser in the spirit of FairFuzz's Figure 1
 * (libxml2's attribute-list declaration).  Every keyword is compared byte by
 * byte, so each matched byte is a new branch; reaching an attribute type means
 * first producing "<!ATTLIST", which plain AFL rarely does. */
#include <stdio.h>
#include <string.h>

#define MAX_INPUT 4096

static const char *cursor;
static const char *end;

/* True, and advance, if the input continues with `word` (byte by byte). */
static int accept(const char *word) {
  const char *p = cursor;
  for (; *word; word++, p++) {
    if (p >= end) return 0;
    if (*p != *word) return 0;
  }
  cursor = p;
  return 1;
}

static void skip_blanks(void) {
  while (cursor < end && (*cursor == ' ' || *cursor == '\t' || *cursor == '\n')) cursor++;
}

static const char *attribute_type(void) {
  if (accept("CDATA")) return "CDATA";
  if (accept("IDREFS")) return "IDREFS";
  if (accept("IDREF")) return "IDREF";
  if (accept("ID")) return "ID";
  if (accept("ENTITY")) return "ENTITY";
  if (accept("ENTITIES")) return "ENTITIES";
  if (accept("NMTOKENS")) return "NMTOKENS";
  if (accept("NMTOKEN")) return "NMTOKEN";
  return NULL;
}

static const char *default_declaration(void) {
  if (accept("#REQUIRED")) return "REQUIRED";
  if (accept("#IMPLIED")) return "IMPLIED";
  if (accept("#FIXED")) {
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
    if (accept("<!ATTLIST")) {
      declarations++;
      printf("ATTLIST with %d attributes\n", parse_attlist());
    } else if (accept("<!DOCTYPE")) {
      puts("DOCTYPE");
    } else {
      cursor++;
    }
  }
  printf("%d declarations in %zu bytes\n", declarations, len);
  return declarations > 0;
}
