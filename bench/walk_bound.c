/* walk_bound.c - what a walk of a unit's syntax tree costs in C (bench/walk_bound.py).
 *
 * Parses each unit through the libclang the rewriters load (its path is the first argument,
 * opened with dlopen: the wheel's library is not named by its soname, and no libclang
 * headers are installed), with the detailed preprocessing record the rewriters ask for,
 * visits every node of the main file, asking each its kind, the offsets of its extent's ends
 * and its canonical type's kind, and tokenizes the file: the queries the rewriters' walk makes
 * of every node, without its decisions.  Prints one line: nodes, parse seconds, walk seconds
 * (CPU time).
 *
 *   walk_bound LIBCLANG [CLANG ARGUMENTS ...] -- UNIT ...
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libclang's C types, as clang-c/Index.h declares them. */
typedef struct { int kind; int xdata; const void *data[3]; } CXCursor;
typedef struct { const void *ptr_data[2]; unsigned int_data; } CXSourceLocation;
typedef struct { const void *ptr_data[2]; unsigned begin_int_data, end_int_data; } CXSourceRange;
typedef struct { int kind; void *data[2]; } CXType;
typedef struct { unsigned int_data[4]; void *ptr_data; } CXToken;
typedef int (*Visitor)(CXCursor, CXCursor, void *);

enum { VISIT_CONTINUE = 1, VISIT_RECURSE = 2, DETAILED_PREPROCESSING_RECORD = 0x01 };

static struct {
  void *(*createIndex)(int, int);
  void *(*parseTranslationUnit)(void *, const char *, const char *const *, int, void *,
                                unsigned, unsigned);
  void (*disposeTranslationUnit)(void *);
  CXCursor (*getTranslationUnitCursor)(void *);
  unsigned (*visitChildren)(CXCursor, Visitor, void *);
  int (*getCursorKind)(CXCursor);
  CXSourceRange (*getCursorExtent)(CXCursor);
  CXSourceLocation (*getRangeStart)(CXSourceRange);
  CXSourceLocation (*getRangeEnd)(CXSourceRange);
  void (*getSpellingLocation)(CXSourceLocation, void **, unsigned *, unsigned *, unsigned *);
  int (*Location_isFromMainFile)(CXSourceLocation);
  CXType (*getCursorType)(CXCursor);
  CXType (*getCanonicalType)(CXType);
  void (*tokenize)(void *, CXSourceRange, CXToken **, unsigned *);
  void (*disposeTokens)(void *, CXToken *, unsigned);
} clang;

/* What the walk read, summed so that the compiler keeps every query. */
static struct { long nodes; unsigned long digest; } seen;

static void bind(void *library, void *slot, const char *name) {
  void *symbol = dlsym(library, name);
  if (!symbol) {
    fprintf(stderr, "walk_bound: %s: %s\n", name, dlerror());
    exit(2);
  }
  memcpy(slot, &symbol, sizeof symbol);
}

static void load(const char *path) {
  void *library = dlopen(path, RTLD_NOW);
  if (!library) {
    fprintf(stderr, "walk_bound: %s\n", dlerror());
    exit(2);
  }
#define BIND(field) bind(library, &clang.field, "clang_" #field)
  BIND(createIndex); BIND(parseTranslationUnit); BIND(disposeTranslationUnit);
  BIND(getTranslationUnitCursor); BIND(visitChildren); BIND(getCursorKind);
  BIND(getCursorExtent); BIND(getRangeStart); BIND(getRangeEnd); BIND(getSpellingLocation);
  BIND(Location_isFromMainFile); BIND(getCursorType); BIND(getCanonicalType);
  BIND(tokenize); BIND(disposeTokens);
#undef BIND
}

static int visit(CXCursor cursor, CXCursor parent, void *data) {
  (void)parent;
  (void)data;
  CXSourceRange extent = clang.getCursorExtent(cursor);
  CXSourceLocation start = clang.getRangeStart(extent);
  if (!clang.Location_isFromMainFile(start)) return VISIT_CONTINUE;
  void *file;
  unsigned first, last;
  clang.getSpellingLocation(start, &file, NULL, NULL, &first);
  clang.getSpellingLocation(clang.getRangeEnd(extent), &file, NULL, NULL, &last);
  CXType type = clang.getCanonicalType(clang.getCursorType(cursor));
  seen.nodes++;
  seen.digest += (unsigned long)clang.getCursorKind(cursor) + (unsigned long)type.kind + first + last;
  return VISIT_RECURSE;
}

static double cpu_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: walk_bound LIBCLANG [CLANG ARGUMENTS ...] -- UNIT ...\n");
    return 2;
  }
  load(argv[1]);
  int separator = 2;
  while (separator < argc && strcmp(argv[separator], "--") != 0) separator++;
  void *index = clang.createIndex(0, 0);
  double parse = 0, walk = 0;
  for (int unit = separator + 1; unit < argc; unit++) {
    double began = cpu_seconds();
    void *tu = clang.parseTranslationUnit(index, argv[unit], (const char *const *)argv + 2,
                                          separator - 2, NULL, 0, DETAILED_PREPROCESSING_RECORD);
    if (!tu) {
      fprintf(stderr, "walk_bound: %s: not parsed\n", argv[unit]);
      return 1;
    }
    double parsed = cpu_seconds();
    CXCursor top = clang.getTranslationUnitCursor(tu);
    clang.visitChildren(top, visit, NULL);
    CXToken *tokens;
    unsigned count;
    clang.tokenize(tu, clang.getCursorExtent(top), &tokens, &count);
    clang.disposeTokens(tu, tokens, count);
    walk += cpu_seconds() - parsed;
    parse += parsed - began;
    clang.disposeTranslationUnit(tu);
  }
  printf("%ld %.4f %.4f %lu\n", seen.nodes, parse, walk, seen.digest);
  return 0;
}
