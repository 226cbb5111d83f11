/* ffcc_rt.h - what the runtime's own files share (not seen by programs).
 *
 * The runtime is split by concern: ffcc_map.c owns the coverage map and the
 * compiler's coverage hooks, ffcc_forkserver.c owns the fuzzer handshake and
 * persistent mode.  Everything here has hidden visibility so that a shared
 * object carrying its own copy never clashes with the executable's. */
#ifndef FFCC_RT_H
#define FFCC_RT_H

#include <stddef.h>
#include <stdint.h>

#define FFCC_HIDDEN __attribute__((visibility("hidden")))
#define FFCC_ALIGN_UP(x) (((x) + FFCC_MAP_ALIGN - 1) / FFCC_MAP_ALIGN * FFCC_MAP_ALIGN)

/* The map the hooks write into: edges at [0, edge_size), then labelled shared
 * objects' labels (module_size bytes), then the executable's own labels. */
typedef struct {
  uint8_t *area;       /* current map (shared memory, or private memory) */
  uint32_t edge_size;  /* bytes of the edge region */
  uint32_t label_size; /* bytes after the edge region: module and label regions */
  uint32_t module_size; /* bytes of the module region (labelled shared objects) */
  int shared;          /* 1 when area is the fuzzer's shared memory */
} ffcc_map_t;

FFCC_HIDDEN extern ffcc_map_t ffcc_map;
FFCC_HIDDEN extern uint8_t *__ffcc_area;

/* Attach the fuzzer's map (from __AFL_SHM_ID) or allocate a private one sized
 * for this binary.  Idempotent. */
FFCC_HIDDEN void ffcc_map_attach(void);
/* Total map size this binary needs: edge region plus label region. */
FFCC_HIDDEN uint32_t ffcc_map_size(void);
/* Point the hooks at a private scratch map (end of a persistent loop). */
FFCC_HIDDEN void ffcc_map_detach_to_scratch(void);
/* Forget the previous location (start of a new persistent iteration). */
FFCC_HIDDEN void ffcc_map_reset_path(void);
/* The bytes at the map's start that a run may have written since the last
 * call: the whole map, or without the executable's own label region when none
 * of its labels counted. */
FFCC_HIDDEN uint32_t ffcc_map_take_written(void);

#endif
