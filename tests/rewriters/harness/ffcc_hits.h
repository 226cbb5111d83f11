/* Test preamble: the same label body shape as the driver's, hitting a byte per label. */
extern unsigned char __ffcc_hits[];
#define __FFCC_LABEL(i) { __asm__ volatile("" ::: "memory"); __ffcc_hits[i] = 1; }
#define __FFCC_TEMP
