/* Test preamble: labels in the branch-free shape of the driver's (instrument/labels.py),
 * setting a byte per label; each site's labels behind the driver's gate shape (GATE_FORM),
 * over a byte per site that $FFCC_GATES_CLOSED sets for every site (hits.c). */
extern unsigned char __ffcc_hits[];
extern unsigned char __ffcc_gates[];
#define __FFCC_LABEL(i, p) (__ffcc_hits[i] |= (unsigned char)!!(p))
/* A group of labels as its labels' statements: the driver's asm form of a group is tested
 * with the driver's preamble (tests/instrument). */
#define __FFCC_COMPARE(a, b, asked, labels) labels
#define __FFCC_COUNTS(asked, labels, ...) labels
#define __FFCC_ARITH(a, b, asked, labels) labels
#define __FFCC_LAUNDER_COMPARED(x) __asm__ volatile("" : "+r"(x))
#define __FFCC_TEMP
#if defined(__x86_64__)
#define __FFCC_GATE_OPEN(g) __label__ __ffcc_gate_skip, __ffcc_gate_never; \
  __asm__ goto("cmpb $0, %0\n\tjne %l[__ffcc_gate_skip]" : : "m"(__ffcc_gates[g]) : "cc" \
               : __ffcc_gate_skip, __ffcc_gate_never);
#define __FFCC_GATE_CLOSE(g) goto __ffcc_gate_skip; __ffcc_gate_never: __builtin_unreachable(); \
  __ffcc_gate_skip: ;
#else
#define __FFCC_GATE_OPEN(g) if (!__ffcc_gates[g]) {
#define __FFCC_GATE_CLOSE(g) }
#endif
