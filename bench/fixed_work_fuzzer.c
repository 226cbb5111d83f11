/* fixed_work_fuzzer.c - a libFuzzer harness that does the same work for every input.
 *
 * HASH_ROUNDS rounds of FNV-1a over the input's bytes (cycled), whatever its length, so
 * that executions per second compare what each fuzzer spends around the target, not how
 * long the inputs it makes are; then a short ladder of byte comparisons, so that coverage
 * can still grow.  Built for libFuzzer, ffuzz and afl-fuzz by bench/fuzz_bench.py. */
#include <stddef.h>
#include <stdint.h>

#define HASH_ROUNDS 256

volatile uint64_t fixed_work_sink; /* keeps the hash from being optimised away */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t hash = 1469598103934665603ull;
    if (size == 0) return 0;
    for (unsigned round = 0; round < HASH_ROUNDS; round++)
        hash = (hash ^ data[round % size]) * 1099511628211ull;
    fixed_work_sink = hash;
    if (size >= 4 && data[0] == 'F') {
        if (data[1] == 'U') {
            if (data[2] == 'Z') {
                if (data[3] == 'Z') fixed_work_sink = 0;
            }
        }
    }
    return 0;
}
