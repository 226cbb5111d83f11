/* ffcc_shared_stub.c - linked into shared objects that ffcc builds.
 *
 * The executable that loads the object exports the real hooks, which the
 * dynamic linker prefers over these weak ones; a program not built by ffcc
 * gets these no-ops, so the library still loads and runs.
 *
 * An object with labels hands its label section to the executable's runtime
 * as it is loaded (__ffcc_register_labels, ffcc_protocol.h: modules), which
 * sets the object's own deltas to its place in the map.  Loaded by a program
 * not built by ffcc, its labels count in the section itself. */
#include <stdint.h>

extern uint8_t __start___ffcc_labels[] __attribute__((weak, visibility("hidden")));
extern uint8_t __stop___ffcc_labels[] __attribute__((weak, visibility("hidden")));
/* The object's deltas (labelled units define them too, as weak). */
__attribute__((weak, visibility("hidden"))) uintptr_t __ffcc_label_delta;
__attribute__((weak, visibility("hidden"))) uintptr_t __ffcc_retire_delta;

void __ffcc_register_labels(uint8_t *start, uint8_t *stop, uintptr_t *label_delta,
                            uintptr_t *retire_delta) __attribute__((weak));

__attribute__((constructor)) static void register_labels(void) {
  uint8_t *start = __start___ffcc_labels, *stop = __stop___ffcc_labels;
  if (__ffcc_register_labels && start != stop)
    __ffcc_register_labels(start, stop, &__ffcc_label_delta, &__ffcc_retire_delta);
}

__attribute__((weak)) void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) {
  for (uint32_t *g = start; g < stop; g++) *g = 0;
}
__attribute__((weak)) void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { (void)guard; }
__attribute__((weak)) void __sanitizer_cov_trace_pc(void) {}
__attribute__((weak)) int __afl_persistent_loop(unsigned int max_iterations) {
  static unsigned int done;
  (void)max_iterations;
  return !done++;
}
__attribute__((weak)) void __afl_manual_init(void) {}
static uint32_t stub_len;
__attribute__((weak)) uint32_t *__afl_fuzz_len = &stub_len;
__attribute__((weak)) uint8_t *__afl_fuzz_ptr;
