/* ffcc_cmplog.c - the comparison log of `ffcc --cmplog` binaries.
 *
 * Linked only into --cmplog builds, whose units are compiled with
 * -fsanitize-coverage=trace-cmp (integer comparisons and switches call the
 * __sanitizer_cov_trace_*cmp* hooks below) and whose link wraps the
 * comparison routines (-Wl,--wrap=strcmp and so on: the program's calls reach
 * __wrap_strcmp, which calls the C library's strcmp and logs its operands;
 * the units are compiled with -fno-builtin-strcmp... so that no call is
 * inlined away).  The program's behaviour is unchanged: every wrapper
 * returns what the real routine returns.
 *
 * Operands go into the fuzzer's segment (FFCC_ENV_CMPLOG_SHM_ID, layout in
 * ffcc_protocol.h); without it every hook returns at once.  A call's site
 * follows from the hook's return address relative to the executable's ELF
 * header (site_of), the same in every child of one forkserver. */
#define _GNU_SOURCE
#include "ffcc_protocol.h"
#include "ffcc_names.h"
#include "ffcc_rt.h"

#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>

extern const uint8_t __ehdr_start[] __attribute__((weak, visibility("hidden")));

static uint8_t *table; /* the fuzzer's segment, or NULL: log nothing */

/* Before the default-priority constructors, so that the forkserver's
 * children (forked from ffcc_forkserver.c's constructor) inherit it. */
__attribute__((constructor(101))) static void ffcc_cmplog_attach(void) {
  const char *id = getenv(FFCC_ENV_CMPLOG_SHM_ID);
  if (!id) return;
  int shm_id = atoi(id);
  struct shmid_ds info;
  if (shmctl(shm_id, IPC_STAT, &info) != 0 || info.shm_segsz < FFCC_CMPLOG_SHM_SIZE) return;
  void *p = shmat(shm_id, NULL, 0);
  if (p != (void *)-1) table = p;
}

/* Sites tried after a call's own before it shares one. */
#define SITE_PROBES 16

/* The site the call at `address` logs at in this run: its hash's, or the first
 * of the next SITE_PROBES that is free or its own.  Two calls sharing a site
 * share its ring of records, and a labelled build's label code compares in hot
 * loops: sharing with one, a comparison the program makes once lost its records
 * (md5sum's LAVA checks, among 535 sites).  A site is free again once the
 * fuzzer zeroes its hit count. */
static uint32_t site_of(uintptr_t address) {
  uint32_t tag = (uint32_t)(address - (uintptr_t)__ehdr_start);
  uint32_t home = (uint32_t)(((uint64_t)tag * 0x9E3779B97F4A7C15ull) >> 40) % FFCC_CMPLOG_SITES;
  uint32_t *hits = (uint32_t *)table, *tags = (uint32_t *)(table + FFCC_CMPLOG_TAGS_AT);
  for (uint32_t probe = 0; probe < SITE_PROBES; probe++) {
    uint32_t site = (home + probe) % FFCC_CMPLOG_SITES;
    if (!hits[site]) {
      tags[site] = tag;
      return site;
    }
    if (tags[site] == tag) return site;
  }
  return home;
}

/* The next record of `site` (the oldest one once the site has logged
 * FFCC_CMPLOG_RECORDS calls). */
static struct ffcc_cmplog_record *next_record(uint32_t site) {
  uint32_t *hits = (uint32_t *)table;
  uint32_t n = hits[site]++;
  return (struct ffcc_cmplog_record *)(table + FFCC_CMPLOG_RECORDS_AT) +
         (size_t)site * FFCC_CMPLOG_RECORDS + n % FFCC_CMPLOG_RECORDS;
}

static void log_int(uintptr_t address, uint64_t a, uint64_t b, uint8_t width, uint8_t flags) {
  struct ffcc_cmplog_record *r = next_record(site_of(address));
  for (uint8_t i = 0; i < 8; i++) {
    r->v0[i] = (uint8_t)(a >> (8 * i));
    r->v1[i] = (uint8_t)(b >> (8 * i));
  }
  r->kind = FFCC_CMPLOG_INT;
  r->len0 = r->len1 = width;
  r->flags = flags;
}

static void log_bytes(uintptr_t address, const void *a, size_t len_a, const void *b,
                      size_t len_b) {
  struct ffcc_cmplog_record *r = next_record(site_of(address));
  r->len0 = (uint8_t)(len_a < FFCC_CMPLOG_OPERAND ? len_a : FFCC_CMPLOG_OPERAND);
  r->len1 = (uint8_t)(len_b < FFCC_CMPLOG_OPERAND ? len_b : FFCC_CMPLOG_OPERAND);
  memcpy(r->v0, a, r->len0);
  memcpy(r->v1, b, r->len1);
  r->kind = FFCC_CMPLOG_RTN;
  r->flags = 0;
}

#define CALLER ((uintptr_t)__builtin_return_address(0))
#define INT_HOOK(name, type, width, flags)                          \
  void name(type a, type b) {                                       \
    if (table) log_int(CALLER, (uint64_t)a, (uint64_t)b, width, flags); \
  }

/* Integer comparisons; const_cmp: the first operand is a compile-time constant. */
INT_HOOK(__sanitizer_cov_trace_cmp1, uint8_t, 1, 0)
INT_HOOK(__sanitizer_cov_trace_cmp2, uint16_t, 2, 0)
INT_HOOK(__sanitizer_cov_trace_cmp4, uint32_t, 4, 0)
INT_HOOK(__sanitizer_cov_trace_cmp8, uint64_t, 8, 0)
INT_HOOK(__sanitizer_cov_trace_const_cmp1, uint8_t, 1, FFCC_CMPLOG_CONST0)
INT_HOOK(__sanitizer_cov_trace_const_cmp2, uint16_t, 2, FFCC_CMPLOG_CONST0)
INT_HOOK(__sanitizer_cov_trace_const_cmp4, uint32_t, 4, FFCC_CMPLOG_CONST0)
INT_HOOK(__sanitizer_cov_trace_const_cmp8, uint64_t, 8, FFCC_CMPLOG_CONST0)

/* gcc's floating-point comparisons, logged as their bit patterns. */
void __sanitizer_cov_trace_cmpf(float a, float b) {
  uint32_t x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  if (table) log_int(CALLER, x, y, 4, 0);
}

void __sanitizer_cov_trace_cmpd(double a, double b) {
  uint64_t x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  if (table) log_int(CALLER, x, y, 8, 0);
}

/* cases[0] is the number of cases, cases[1] the width in bits, then the
 * values: each case is logged as a comparison of its own site. */
void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases) {
  if (!table) return;
  uint8_t width = (uint8_t)(cases[1] / 8);
  for (uint64_t i = 0; i < cases[0]; i++)
    log_int(CALLER + (uintptr_t)i, cases[2 + i], value, width, FFCC_CMPLOG_CONST0);
}

/* Comparison routines, through the linker's --wrap. */
int __real_memcmp(const void *a, const void *b, size_t n);
int __real_bcmp(const void *a, const void *b, size_t n);
int __real_strcmp(const char *a, const char *b);
int __real_strncmp(const char *a, const char *b, size_t n);
int __real_strcasecmp(const char *a, const char *b);
int __real_strncasecmp(const char *a, const char *b, size_t n);
char *__real_strstr(const char *haystack, const char *needle);

int __wrap_memcmp(const void *a, const void *b, size_t n);
int __wrap_bcmp(const void *a, const void *b, size_t n);
int __wrap_strcmp(const char *a, const char *b);
int __wrap_strncmp(const char *a, const char *b, size_t n);
int __wrap_strcasecmp(const char *a, const char *b);
int __wrap_strncasecmp(const char *a, const char *b, size_t n);
char *__wrap_strstr(const char *haystack, const char *needle);

static void log_strings(uintptr_t address, const char *a, const char *b, size_t n) {
  size_t most = n < FFCC_CMPLOG_OPERAND ? n : FFCC_CMPLOG_OPERAND;
  log_bytes(address, a, strnlen(a, most), b, strnlen(b, most));
}

int __wrap_memcmp(const void *a, const void *b, size_t n) {
  if (table) log_bytes(CALLER, a, n, b, n);
  return __real_memcmp(a, b, n);
}

int __wrap_bcmp(const void *a, const void *b, size_t n) {
  if (table) log_bytes(CALLER, a, n, b, n);
  return __real_bcmp(a, b, n);
}

int __wrap_strcmp(const char *a, const char *b) {
  if (table) log_strings(CALLER, a, b, FFCC_CMPLOG_OPERAND);
  return __real_strcmp(a, b);
}

int __wrap_strncmp(const char *a, const char *b, size_t n) {
  if (table) log_strings(CALLER, a, b, n);
  return __real_strncmp(a, b, n);
}

int __wrap_strcasecmp(const char *a, const char *b) {
  if (table) log_strings(CALLER, a, b, FFCC_CMPLOG_OPERAND);
  return __real_strcasecmp(a, b);
}

int __wrap_strncasecmp(const char *a, const char *b, size_t n) {
  if (table) log_strings(CALLER, a, b, n);
  return __real_strncasecmp(a, b, n);
}

char *__wrap_strstr(const char *haystack, const char *needle) {
  if (table) log_strings(CALLER, haystack, needle, FFCC_CMPLOG_OPERAND);
  return __real_strstr(haystack, needle);
}
