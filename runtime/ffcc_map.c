/* ffcc_map.c - the coverage map and the compiler's coverage hooks.
 *
 * clang builds use -fsanitize-coverage=trace-pc-guard: every edge gets a
 * guard, numbered here from 1 in initialisation order (stable from run to
 * run), and the guard number is the edge's map index: no collisions.
 * gcc builds (FFCC_EDGE_HASHED) use -fsanitize-coverage=trace-pc: blocks are
 * identified by their offset from the module's ELF header (stable under
 * ASLR), hashed into a 64 KiB region and combined AFL-style as prev ^ cur.
 *
 * Labels: each instrumented unit reserves bytes in section __ffcc_labels; the
 * section's size is the label region's size.  A label counts at its byte's
 * address plus __ffcc_label_delta, which moves it into the label region of the
 * current map, and reads its retirement byte at its byte's address plus
 * __ffcc_retire_delta (instrument/labels.py writes the label code). */
#define _GNU_SOURCE
#include "ffcc_protocol.h"
#include "ffcc_names.h"
#include "ffcc_rt.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

extern uint8_t __start___ffcc_labels[] __attribute__((weak, visibility("hidden")));
extern uint8_t __stop___ffcc_labels[] __attribute__((weak, visibility("hidden")));

/* Until the map is attached, hits land in this boot area (or in a larger
 * private area once more guards than fit here have been handed out). */
static uint8_t boot_area[FFCC_DEFAULT_MAP_SIZE];

FFCC_HIDDEN uint8_t *__ffcc_area = boot_area;
FFCC_HIDDEN ffcc_map_t ffcc_map;

/* Before the map is attached both are 0: labels count in the label section
 * itself and read their own counts as retirement bytes (hits before the map
 * exists are nobody's coverage). */
FFCC_HIDDEN uintptr_t __ffcc_label_delta;
FFCC_HIDDEN uintptr_t __ffcc_retire_delta;

static uint32_t label_bytes(void) {
  if (!__start___ffcc_labels || !__stop___ffcc_labels) return 0;
  return (uint32_t)(__stop___ffcc_labels - __start___ffcc_labels);
}

static uint8_t *private_area(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  return p;
}

#ifdef FFCC_EDGE_HASHED

extern const uint8_t __ehdr_start[] __attribute__((weak, visibility("hidden")));
static __thread uint32_t prev_loc __attribute__((tls_model("initial-exec")));

static uint32_t edge_region(void) { return 1u << FFCC_GCC_EDGE_BITS; }

void __sanitizer_cov_trace_pc(void) {
  uint64_t off = (uint64_t)((uintptr_t)__builtin_return_address(0) - (uintptr_t)__ehdr_start);
  uint32_t cur = (uint32_t)((off * 0x9E3779B97F4A7C15ull) >> (64 - FFCC_GCC_EDGE_BITS));
  uint8_t *cell = &__ffcc_area[cur ^ prev_loc];
  uint8_t v = (uint8_t)(*cell + 1);
  *cell = v ? v : 1; /* never wrap to "not hit" */
  prev_loc = cur >> 1;
}

FFCC_HIDDEN void ffcc_map_reset_path(void) { prev_loc = 0; }

#else

static uint32_t next_guard = 1; /* 0 means "not numbered yet" */
static uint32_t area_capacity = sizeof boot_area;

static uint32_t edge_region(void) { return FFCC_ALIGN_UP(next_guard); }

void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
  if (start == stop || *start) return; /* empty or already numbered */
  for (uint32_t *g = start; g < stop; g++) {
    /* A module loaded after the map was sized shares slot 0 rather than
     * writing past the fuzzer's map. */
    *g = (ffcc_map.area && next_guard >= ffcc_map.edge_size) ? 0 : next_guard++;
  }
  if (!ffcc_map.area && next_guard > area_capacity) {
    area_capacity = FFCC_ALIGN_UP(next_guard) * 2;
    __ffcc_area = private_area(area_capacity);
  }
}

void __sanitizer_cov_trace_pc_guard(uint32_t *guard) {
  uint8_t *cell = &__ffcc_area[*guard];
  uint8_t v = (uint8_t)(*cell + 1);
  *cell = v ? v : 1; /* never wrap to "not hit" */
}

FFCC_HIDDEN void ffcc_map_reset_path(void) {}

#endif

FFCC_HIDDEN uint32_t ffcc_map_size(void) {
  return edge_region() + FFCC_ALIGN_UP(label_bytes());
}

static uintptr_t label_delta(const uint8_t *region) {
  return (uintptr_t)region - (uintptr_t)__start___ffcc_labels;
}

static void point_hooks_at(uint8_t *area) {
  __ffcc_area = area;
  if (ffcc_map.label_size) __ffcc_label_delta = label_delta(area + ffcc_map.edge_size);
}

/* The fuzzer's segment named by environment variable `name`, if it is large
 * enough. */
static uint8_t *shared_area(const char *name, uint32_t needed, int flags) {
  const char *id = getenv(name);
  if (!id) return NULL;
  int shm_id = atoi(id);
  struct shmid_ds info;
  if (shmctl(shm_id, IPC_STAT, &info) != 0 || info.shm_segsz < needed) return NULL;
  void *p = shmat(shm_id, NULL, flags);
  return p == (void *)-1 ? NULL : p;
}

/* The fuzzer's retirement bytes, else zeros: every label counts. */
static void attach_retirement(void) {
  uint8_t *region = shared_area(FFCC_ENV_RETIRE_SHM_ID, ffcc_map.label_size, SHM_RDONLY);
  __ffcc_retire_delta = label_delta(region ? region : private_area(ffcc_map.label_size));
}

FFCC_HIDDEN void ffcc_map_attach(void) {
  if (ffcc_map.area) return;
  ffcc_map.edge_size = edge_region();
  ffcc_map.label_size = FFCC_ALIGN_UP(label_bytes());
  uint32_t size = ffcc_map.edge_size + ffcc_map.label_size;
  uint8_t *area = shared_area(FFCC_ENV_SHM_ID, size, 0);
  ffcc_map.shared = area != NULL;
  if (!area) area = private_area(size);
  ffcc_map.area = area;
  point_hooks_at(area);
  if (ffcc_map.label_size) attach_retirement();
}

FFCC_HIDDEN void ffcc_map_detach_to_scratch(void) {
  static uint8_t *scratch;
  if (!scratch) scratch = private_area(ffcc_map.edge_size + ffcc_map.label_size);
  point_hooks_at(scratch);
}
