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
 * __ffcc_retire_delta (instrument/labels.py writes the label code), and sets
 * __ffcc_labels_written, so that the end of a case scans the label region only
 * when a label counted in it (a lean build's region is zero in most cases).  Labelled
 * shared objects have deltas of their own, which __ffcc_register_labels sets
 * to their place in the module region (ffcc_protocol.h, modules). */
#define _GNU_SOURCE
#include "ffcc_protocol.h"
#include "ffcc_names.h"
#include "ffcc_rt.h"

#include <limits.h>
#include <link.h>
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
/* Set by the label code of the executable's own labels when one counts. */
FFCC_HIDDEN uint8_t __ffcc_labels_written;

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
  if (ffcc_map.area) return ffcc_map.edge_size + ffcc_map.label_size;
  return edge_region() + FFCC_ALIGN_UP(label_bytes());
}

FFCC_HIDDEN uint32_t ffcc_map_take_written(void) {
  uint32_t size = ffcc_map.edge_size + ffcc_map.label_size;
  if (!__ffcc_labels_written) return ffcc_map.edge_size + ffcc_map.module_size;
  __ffcc_labels_written = 0;
  return size;
}

static uintptr_t label_delta(const uint8_t *region) {
  return (uintptr_t)region - (uintptr_t)__start___ffcc_labels;
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

/* --- labelled shared objects (modules) --- */

/* A module that registered in this process: its label section and deltas, and
 * its base in the module region (-1: not placed, its labels count nowhere). */
typedef struct {
  uint8_t *start;
  uint32_t size;
  uintptr_t *label_delta;
  uintptr_t *retire_delta;
  int64_t base;
} module_t;

static module_t modules[FFCC_MODULES_MAX];
static uint32_t module_count;
static struct ffcc_modules *module_table; /* shared by the forkserver and its children */
static uint8_t *module_zeros;             /* modules' retirement bytes: never retired */
static uint8_t *current_area;             /* the map the hooks write to */

static uint64_t fnv1a(const char *text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (; *text; text++) hash = (hash ^ (uint8_t)*text) * 0x100000001b3ull;
  return hash;
}

struct module_search {
  uintptr_t address;
  const char *path;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct module_search *search = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
    uintptr_t low = info->dlpi_addr + segment->p_vaddr;
    if (segment->p_type == PT_LOAD && search->address - low < segment->p_memsz) {
      search->path = info->dlpi_name;
      return 1;
    }
  }
  return 0;
}

/* The file of the module whose label section starts at `start`, as an absolute
 * path where it can be had (the dynamic linker names it as it found it). */
static const char *module_path(const uint8_t *start) {
  static char absolute[PATH_MAX];
  struct module_search search = {(uintptr_t)start, ""};
  dl_iterate_phdr(find_module, &search);
  if (search.path && realpath(search.path, absolute)) return absolute;
  return search.path ? search.path : "";
}

/* The module's base in the shared table: where a child placed it before, else
 * the next free room; -1 when none is left. */
static int64_t table_place(const uint8_t *start, uint32_t size) {
  const char *path = module_path(start);
  uint64_t id = fnv1a(path);
  uint32_t count = __atomic_load_n(&module_table->count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < count; i++)
    if (module_table->module[i].id == id && module_table->module[i].size == size)
      return module_table->module[i].base;
  uint32_t room = FFCC_ALIGN_UP(size);
  if (count >= FFCC_MODULES_MAX || module_table->region - module_table->used < room) return -1;
  struct ffcc_module *entry = &module_table->module[count];
  entry->id = id;
  entry->base = module_table->used;
  entry->size = size;
  size_t length = strlen(path) < FFCC_MODULE_PATH ? strlen(path) : FFCC_MODULE_PATH - 1;
  memcpy(entry->path, path, length); /* a longer path is cut short */
  entry->path[length] = 0;
  module_table->used += room;
  __atomic_store_n(&module_table->count, count + 1, __ATOMIC_RELEASE);
  return entry->base;
}

static void point_module_at(const module_t *module, uint8_t *area) {
  if (module->base < 0) return;
  uint8_t *region = area + ffcc_map.edge_size + module->base;
  *module->label_delta = (uintptr_t)region - (uintptr_t)module->start;
  *module->retire_delta = (uintptr_t)(module_zeros + module->base) - (uintptr_t)module->start;
}

/* Called by each labelled shared object as it is loaded (ffcc_shared_stub.c):
 * before the map exists it is placed when the map is attached; later it is
 * placed at once, in the reserve. */
void __ffcc_register_labels(uint8_t *start, uint8_t *stop, uintptr_t *label_delta,
                            uintptr_t *retire_delta) {
  if (module_count >= FFCC_MODULES_MAX || stop <= start) return;
  module_t *module = &modules[module_count++];
  *module = (module_t){start, (uint32_t)(stop - start), label_delta, retire_delta, -1};
  if (!module_table) return;
  module->base = table_place(start, module->size);
  point_module_at(module, current_area);
}

static uint32_t linked_module_bytes(void) {
  uint32_t bytes = 0;
  for (uint32_t i = 0; i < module_count; i++) bytes += FFCC_ALIGN_UP(modules[i].size);
  return bytes;
}

static uint32_t label_reserve(void) {
  const char *reserve = getenv(FFCC_ENV_LABEL_RESERVE);
  return reserve ? FFCC_ALIGN_UP((uint32_t)strtoul(reserve, NULL, 10)) : 0;
}

static void *shared_anonymous(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  return p;
}

/* The module table, in the fuzzer's segment when it offers one, and the linked
 * modules placed in it.  Returns the module region's size. */
static uint32_t attach_modules(void) {
  uint32_t region = linked_module_bytes() + label_reserve();
  if (!region) return 0;
  module_table = (struct ffcc_modules *)shared_area(FFCC_ENV_MODULES_SHM_ID,
                                                   FFCC_MODULES_SHM_SIZE, 0);
  if (!module_table) module_table = shared_anonymous(FFCC_MODULES_SHM_SIZE);
  memset(module_table, 0, FFCC_MODULES_SHM_SIZE);
  module_table->region = region;
  module_zeros = private_area(region);
  for (uint32_t i = 0; i < module_count; i++)
    modules[i].base = table_place(modules[i].start, modules[i].size);
  __atomic_store_n(&module_table->layout, FFCC_MODULES_LAYOUT, __ATOMIC_RELEASE);
  return region;
}

static void point_hooks_at(uint8_t *area) {
  __ffcc_area = area;
  current_area = area;
  if (ffcc_map.label_size > ffcc_map.module_size)
    __ffcc_label_delta = label_delta(area + ffcc_map.edge_size + ffcc_map.module_size);
  for (uint32_t i = 0; i < module_count; i++) point_module_at(&modules[i], area);
}

/* The fuzzer's retirement bytes for the executable's own labels, else zeros:
 * every label counts. */
static void attach_retirement(void) {
  uint32_t own = ffcc_map.label_size - ffcc_map.module_size;
  uint8_t *region = shared_area(FFCC_ENV_RETIRE_SHM_ID, own, SHM_RDONLY);
  __ffcc_retire_delta = label_delta(region ? region : private_area(own));
}

FFCC_HIDDEN void ffcc_map_attach(void) {
  if (ffcc_map.area) return;
  ffcc_map.edge_size = edge_region();
  ffcc_map.module_size = attach_modules();
  ffcc_map.label_size = ffcc_map.module_size + FFCC_ALIGN_UP(label_bytes());
  uint32_t size = ffcc_map.edge_size + ffcc_map.label_size;
  uint8_t *area = shared_area(FFCC_ENV_SHM_ID, size, 0);
  ffcc_map.shared = area != NULL;
  if (!area) area = private_area(size);
  ffcc_map.area = area;
  point_hooks_at(area);
  if (label_bytes()) attach_retirement();
}

FFCC_HIDDEN void ffcc_map_detach_to_scratch(void) {
  static uint8_t *scratch;
  if (!scratch) scratch = private_area(ffcc_map.edge_size + ffcc_map.label_size);
  point_hooks_at(scratch);
}
