/* A test driver that makes cJSON's behaviour visible: parse, print both ways,
 * walk, duplicate and compare, sort, diff as a JSON patch, minify.  Used to
 * compare a plain build with a labelled one on many inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"
#include "cJSON_Utils.h"

static void walk(const cJSON *item, int depth, long counts[8], double *sum) {
  for (; item; item = item->next) {
    if (cJSON_IsNumber(item)) { counts[0]++; *sum += item->valuedouble; }
    else if (cJSON_IsString(item)) counts[1] += (long)strlen(item->valuestring);
    else if (cJSON_IsBool(item)) counts[2] += cJSON_IsTrue(item) ? 2 : 1;
    else if (cJSON_IsNull(item)) counts[3]++;
    else if (cJSON_IsArray(item)) counts[4] += cJSON_GetArraySize(item);
    else if (cJSON_IsObject(item)) counts[5]++;
    if (depth > counts[6]) counts[6] = depth;
    walk(item->child, depth + 1, counts, sum);
  }
}

static void print_owned(const char *what, char *text) {
  printf("%s: %s\n", what, text ? text : "(null)");
  free(text);
}

int main(int argc, char **argv) {
  FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!in) return 2;
  static char buf[1 << 16];
  size_t len = fread(buf, 1, sizeof buf - 1, in);
  buf[len] = '\0';
  const char *end = NULL;
  cJSON *json = cJSON_ParseWithOpts(buf, &end, 0);
  if (!json) {
    printf("error at %ld\n", (long)(cJSON_GetErrorPtr() - buf));
    return 1;
  }
  printf("consumed %ld of %zu\n", (long)(end - buf), len);
  print_owned("formatted", cJSON_Print(json));
  print_owned("unformatted", cJSON_PrintUnformatted(json));
  long counts[8] = {0};
  double sum = 0;
  walk(json, 0, counts, &sum);
  printf("numbers %ld sum %.6g strings %ld bools %ld nulls %ld array items %ld objects %ld depth %ld\n",
         counts[0], sum, counts[1], counts[2], counts[3], counts[4], counts[5], counts[6]);
  cJSON *copy = cJSON_Duplicate(json, 1);
  printf("equal %d %d\n", cJSON_Compare(json, copy, 1), cJSON_Compare(json, copy, 0));
  cJSONUtils_SortObject(copy);
  print_owned("sorted", cJSON_PrintUnformatted(copy));
  cJSON *patches = cJSONUtils_GeneratePatches(json, copy);
  print_owned("patches", cJSON_PrintUnformatted(patches));
  cJSON_Delete(patches);
  cJSON_Delete(copy);
  cJSON_Delete(json);
  cJSON_Minify(buf);
  printf("minified %zu: %s\n", strlen(buf), buf);
  return 0;
}
