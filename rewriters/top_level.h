/* top_level.h - a translation unit's top level sorted in C, as seen from Python.
 *
 * Fed verbatim to cffi's cdef (rewriters/_build.py): plain declarations only.
 *
 * libclang lists a unit's top level with a call back per node, and with a detailed
 * preprocessing record its headers give it thousands of nodes (every macro definition and
 * expansion of every header); a Python call back per node cost a third of a small unit's
 * annotation.  Here C visits them and keeps what unit.py needs: the spans of the macro
 * expansions written in the main file, every macro definition, and the declarations that
 * may be the main file's.  It calls libclang through the pointers Python hands it (the
 * functions of the libclang the bindings loaded), so it links against no libclang itself.
 */

/* libclang's CXCursor and CXSourceRange, field for field. */
typedef struct {
    int kind;
    int xdata;
    const void *data[3];
} ffcc_cursor;

typedef struct {
    const void *ptr_data[2];
    unsigned int begin_int_data;
    unsigned int end_int_data;
} ffcc_source_range;

/* libclang's CXString. */
typedef struct {
    const void *data;
    unsigned int private_flags;
} ffcc_string;

/* clang_visitChildren (its visitor returns a CXChildVisitResult) and clang_getCursorExtent. */
typedef unsigned int (*ffcc_visit_children)(ffcc_cursor, int (*)(ffcc_cursor, ffcc_cursor, void *),
                                            void *);
typedef ffcc_source_range (*ffcc_get_extent)(ffcc_cursor);

/* What the walk found; each array holds up to `capacity` entries, the counts say how many
 * there were (more than `capacity` when the arrays were too small: call again, larger). */
typedef struct {
    size_t capacity;
    ffcc_cursor *declarations;
    size_t declaration_count;
    ffcc_cursor *definitions;
    size_t definition_count;
    unsigned int *spans;  /* (start, end) pairs: offsets in the main file */
    size_t span_count;
} ffcc_top_level;

/* Sort the children of `unit` (the translation unit's cursor) into `found`.  The main
 * file's locations are the raw ones from `main_start` to `main_end` (ops.MainFileExtents). */
void ffcc_sort_top_level(ffcc_visit_children visit_children, ffcc_get_extent get_extent,
                         const ffcc_cursor *unit,
                         unsigned int main_start, unsigned int main_end,
                         ffcc_top_level *found);

/* clang_getCursorSpelling, clang_getCString and clang_disposeString. */
typedef ffcc_string (*ffcc_get_spelling)(ffcc_cursor);
typedef const char *(*ffcc_get_c_string)(ffcc_string);
typedef void (*ffcc_dispose_string)(ffcc_string);

/* The names of the macro `definitions` (`count` of them, as the walk found them), each
 * followed by a newline, written into `names` as far as `capacity` bytes go; returns the
 * bytes they take (more than `capacity`: call again, larger).  A unit's per-use macro search
 * (unit.py) looks definitions up by name, and there are thousands. */
size_t ffcc_macro_names(ffcc_get_spelling get_spelling, ffcc_get_c_string get_c_string,
                        ffcc_dispose_string dispose_string, const ffcc_cursor *definitions,
                        size_t count, char *names, size_t capacity);

/* libclang's CXToken, clang_tokenize, clang_getTokenKind, clang_getTokenSpelling and
 * clang_disposeTokens (the translation unit is an opaque pointer). */
typedef struct {
    unsigned int int_data[4];
    void *ptr_data;
} ffcc_token;
typedef void (*ffcc_tokenize)(void *, ffcc_source_range, ffcc_token **, unsigned int *);
typedef int (*ffcc_get_token_kind)(ffcc_token);
typedef ffcc_string (*ffcc_get_token_spelling)(void *, ffcc_token);
typedef void (*ffcc_dispose_tokens)(void *, ffcc_token *, unsigned int);

typedef struct {
    ffcc_get_extent get_extent;
    ffcc_tokenize tokenize;
    ffcc_get_token_kind get_token_kind;
    ffcc_get_token_spelling get_token_spelling;
    ffcc_dispose_tokens dispose_tokens;
    ffcc_get_c_string get_c_string;
    ffcc_dispose_string dispose_string;
} ffcc_token_functions;

/* The identifiers of each of the macro `definitions` of translation unit `tu` (what the
 * bindings' Cursor.get_tokens gives as identifiers), separated by spaces, one line per
 * definition, written into `identifiers` as far as `capacity` bytes go; returns the bytes
 * they take (more than `capacity`: call again, larger).  A precompiled preamble keeps them
 * for its thousands of macros (preamble.py), which took a Python token object each. */
size_t ffcc_macro_identifiers(const ffcc_token_functions *functions, void *tu,
                              const ffcc_cursor *definitions, size_t count,
                              char *identifiers, size_t capacity);
