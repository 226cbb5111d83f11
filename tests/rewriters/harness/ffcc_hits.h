/* Test preamble: labels in the branch-free shape of the driver's (instrument/labels.py),
 * setting a byte per label. */
extern unsigned char __ffcc_hits[];
#define __FFCC_LABEL(i, p) (__ffcc_hits[i] |= (unsigned char)!!(p))
#define __FFCC_TEMP
