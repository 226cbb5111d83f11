/* top_level.c - see top_level.h. */
#include <stddef.h>
#include <string.h>

#include "top_level.h"

/* libclang's cursor kinds (Index.h): the preprocessing ones are 500 to 503. */
enum {
    PREPROCESSING_FIRST = 500,
    MACRO_DEFINITION = 501,
    MACRO_EXPANSION = 502,
    PREPROCESSING_LAST = 503,
};
/* A raw location with this bit set is in a macro expansion (SourceLocation::MacroIDBit). */
#define MACRO_LOCATION 0x80000000u
#define CHILD_VISIT_CONTINUE 1

struct walk {
    ffcc_get_extent get_extent;
    unsigned int main_start;
    unsigned int main_end;
    ffcc_top_level *found;
};

static int in_main_file(const struct walk *walk, unsigned int location)
{
    return walk->main_start <= location && location <= walk->main_end;
}

static void keep(ffcc_cursor *array, size_t *count, size_t capacity, ffcc_cursor cursor)
{
    if (*count < capacity)
        array[*count] = cursor;
    ++*count;
}

static void keep_span(ffcc_top_level *found, const struct walk *walk, ffcc_source_range extent)
{
    if (found->span_count < found->capacity) {
        found->spans[2 * found->span_count] = extent.begin_int_data - walk->main_start;
        found->spans[2 * found->span_count + 1] = extent.end_int_data - walk->main_start;
    }
    ++found->span_count;
}

static int sort_child(ffcc_cursor child, ffcc_cursor parent, void *data)
{
    (void)parent;
    struct walk *walk = data;
    ffcc_top_level *found = walk->found;
    if (child.kind == MACRO_EXPANSION) {
        ffcc_source_range extent = walk->get_extent(child);
        if (in_main_file(walk, extent.begin_int_data) && in_main_file(walk, extent.end_int_data))
            keep_span(found, walk, extent);
    } else if (child.kind == MACRO_DEFINITION) {
        keep(found->definitions, &found->definition_count, found->capacity, child);
    } else if (child.kind < PREPROCESSING_FIRST || child.kind > PREPROCESSING_LAST) {
        unsigned int begin = walk->get_extent(child).begin_int_data;
        if ((begin & MACRO_LOCATION) || in_main_file(walk, begin))
            keep(found->declarations, &found->declaration_count, found->capacity, child);
    }
    return CHILD_VISIT_CONTINUE;
}

void ffcc_sort_top_level(ffcc_visit_children visit_children, ffcc_get_extent get_extent,
                         const ffcc_cursor *unit, unsigned int main_start, unsigned int main_end,
                         ffcc_top_level *found)
{
    struct walk walk = {get_extent, main_start, main_end, found};
    found->declaration_count = found->definition_count = found->span_count = 0;
    visit_children(*unit, sort_child, &walk);
}

/* Append `length` bytes of `text` to `out` where they fit; the bytes used so far. */
static size_t append(char *out, size_t used, size_t capacity, const char *text, size_t length)
{
    if (used + length <= capacity)
        memcpy(out + used, text, length);
    return used + length;
}

size_t ffcc_macro_names(ffcc_get_spelling get_spelling, ffcc_get_c_string get_c_string,
                        ffcc_dispose_string dispose_string, const ffcc_cursor *definitions,
                        size_t count, char *names, size_t capacity)
{
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        ffcc_string spelling = get_spelling(definitions[i]);
        const char *name = get_c_string(spelling);
        used = append(names, used, capacity, name != NULL ? name : "",
                      name != NULL ? strlen(name) : 0);
        used = append(names, used, capacity, "\n", 1);
        dispose_string(spelling);
    }
    return used;
}

enum { IDENTIFIER_TOKEN = 2 };  /* CXToken_Identifier */

size_t ffcc_macro_identifiers(const ffcc_token_functions *functions, void *tu,
                              const ffcc_cursor *definitions, size_t count,
                              char *identifiers, size_t capacity)
{
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        ffcc_token *tokens = NULL;
        unsigned int token_count = 0;
        functions->tokenize(tu, functions->get_extent(definitions[i]), &tokens, &token_count);
        const char *separator = "";
        for (unsigned int t = 0; t < token_count; t++) {
            if (functions->get_token_kind(tokens[t]) != IDENTIFIER_TOKEN)
                continue;
            ffcc_string spelling = functions->get_token_spelling(tu, tokens[t]);
            const char *name = functions->get_c_string(spelling);
            used = append(identifiers, used, capacity, separator, strlen(separator));
            used = append(identifiers, used, capacity, name != NULL ? name : "",
                          name != NULL ? strlen(name) : 0);
            functions->dispose_string(spelling);
            separator = " ";
        }
        if (tokens != NULL)
            functions->dispose_tokens(tu, tokens, token_count);
        used = append(identifiers, used, capacity, "\n", 1);
    }
    return used;
}
