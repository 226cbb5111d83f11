/* magic: a record parser guarded by nested magic values, the kind of check
 * input-to-state fuzzing (AFL++'s cmplog, ffuzz -c) is for.  Each guard is one
 * comparison of a whole value, so a coverage-guided fuzzer gets no reward for
 * a partly right guess: a 32-bit file magic, a 64-bit format id, a section
 * name compared with strcmp, and a one-byte checksum of the payload.  Past all
 * four, a payload of 4 bytes or fewer is copied to a buffer that is only
 * allocated for longer ones (the bug: a write through NULL, SIGSEGV).
 *
 * Input: one 30-byte record: u32 LE magic 0x9E3779B9, u64 LE format id
 * 0x0DDBA11C0FFEE5ED, an 8-byte NUL-padded section name ("tachyon"), a
 * payload length N (1..8), 8 payload bytes of which the first N count, then
 * the sum of those N bytes modulo 256. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_MAGIC 0x9E3779B9u
#define FORMAT_ID 0x0DDBA11C0FFEE5EDull
#define SECTION "tachyon"
#define RECORD_SIZE 30

struct record {
  uint32_t magic;
  uint64_t format;
  char name[9]; /* 8 bytes from the file, then a NUL */
  size_t length;
  unsigned char payload[8];
  unsigned char sum;
};

static uint32_t read_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void decode(const unsigned char *data, struct record *r) {
  r->magic = read_u32(data);
  r->format = (uint64_t)read_u32(data + 4) | (uint64_t)read_u32(data + 8) << 32;
  memcpy(r->name, data + 12, 8);
  r->name[8] = '\0';
  r->length = data[20];
  memcpy(r->payload, data + 21, 8);
  r->sum = data[29];
}

static unsigned char checksum(const unsigned char *p, size_t n) {
  unsigned char sum = 0;
  for (size_t i = 0; i < n; i++) sum = (unsigned char)(sum + p[i]);
  return sum;
}

/* Copies the payload out.  BUG: short payloads get no buffer. */
static unsigned store(const unsigned char *payload, size_t n) {
  unsigned char *copy = NULL;
  if (n > 4) copy = malloc(n);
  memcpy(copy, payload, n);
  unsigned last = copy[n - 1];
  free(copy);
  return last;
}

/* 0 for a record that is accepted, else the number of the check it failed. */
static int parse(const struct record *r) {
  if (r->magic != FILE_MAGIC) return 1;
  if (r->format != FORMAT_ID) return 2;
  if (strcmp(r->name, SECTION) != 0) return 3;
  if (r->length < 1 || r->length > 8) return 4;
  if (checksum(r->payload, r->length) != r->sum) return 5;
  printf("section %s: %zu bytes, last %u\n", r->name, r->length, store(r->payload, r->length));
  return 0;
}

int main(int argc, char **argv) {
  unsigned char data[RECORD_SIZE];
  FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
  if (!in) return 2;
  if (fread(data, 1, sizeof data, in) != sizeof data) {
    puts("short record");
    return 0;
  }
  struct record r;
  decode(data, &r);
  int failed = parse(&r);
  if (failed) printf("rejected at check %d\n", failed);
  return 0;
}
