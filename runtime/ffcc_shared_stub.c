/* ffcc_shared_stub.c - linked into shared objects that ffcc builds.
 *
 * The executable that loads the object exports the real hooks, which the
 * dynamic linker prefers over these weak ones; a program not built by ffcc
 * gets these no-ops, so the library still loads and runs. */
#include <stdint.h>

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
