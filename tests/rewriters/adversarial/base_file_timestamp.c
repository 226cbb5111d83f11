/* Issue 17 point 6: __BASE_FILE__ and __TIMESTAMP__ name the file the compiler was given, not
   ffcc's annotated copy of it (gcc ignores #line for __BASE_FILE__; __TIMESTAMP__ is the mtime
   of the file compiled), also where a decision with labels uses them. */
#include <stdio.h>
#include <string.h>

#define ENDS_WITH(s, tail) (strlen(s) >= strlen(tail) && strcmp((s) + strlen(s) - strlen(tail), (tail)) == 0)

static int named_right(const char *base, int n) {
  return n > 0 && ENDS_WITH(base, "base_file_timestamp.c");
}

int main(int argc, char **argv) {
  (void)argv;
  const char *stamp = __TIMESTAMP__;
  printf("%s\n%s\n%s\n", __FILE__, __BASE_FILE__, stamp);
  int ok = named_right(__BASE_FILE__, argc) && strchr(stamp, ':') != NULL && strlen(stamp) == 24;
  printf("ok %d\n", ok);
  return ok ? 0 : 3;
}
