/* ffcc_names.h - environment variables, binary signatures and section names
 * that the runtime, the driver and fuzzers agree on.  AFL++ spells the
 * __AFL_* and ##SIG_AFL_* names; afl-fuzz greps binaries for them.
 *
 * Python reads every `#define NAME "value"` here (runtime/headers.py, for
 * ffcc.runtime.abi and the fuzzer's cffi module): keep each a plain string
 * literal on one line. */
#ifndef FFCC_NAMES_H
#define FFCC_NAMES_H

#define FFCC_ENV_SHM_ID "__AFL_SHM_ID"
#define FFCC_ENV_SHM_FUZZ_ID "__AFL_SHM_FUZZ_ID"
#define FFCC_ENV_PERSISTENT "__AFL_PERSISTENT"
#define FFCC_ENV_DEFER "__AFL_DEFER_FORKSRV"
/* ffcc's own: the batch segment a fuzzer offers (ffcc_protocol.h, Batches). */
#define FFCC_ENV_BATCH_SHM_ID "__FFCC_BATCH_SHM_ID"
/* ffcc's own: the comparison log of a --cmplog binary (ffcc_protocol.h). */
#define FFCC_ENV_CMPLOG_SHM_ID "__FFCC_CMPLOG_SHM_ID"
/* ffcc's own: the label retirement region a fuzzer offers (ffcc_protocol.h). */
#define FFCC_ENV_RETIRE_SHM_ID "__FFCC_RETIRE_SHM_ID"
/* ffcc's own: the module table a fuzzer offers; and the user's: bytes of the
 * module region kept for labelled shared objects the program dlopen()s
 * (ffcc_protocol.h, modules), read by the target whatever fuzzer runs it. */
#define FFCC_ENV_MODULES_SHM_ID "__FFCC_MODULES_SHM_ID"
#define FFCC_ENV_LABEL_RESERVE "FFCC_DLOPEN_LABELS"
/* Iterations of a libFuzzer harness's persistent loop per forked process
 * (read by ffcc's harness main, as AFL++'s libFuzzer driver reads it). */
#define FFCC_ENV_LOOPCOUNT "AFL_FUZZER_LOOPCOUNT"
#define FFCC_SIG_PERSISTENT "##SIG_AFL_PERSISTENT##"
#define FFCC_SIG_DEFER "##SIG_AFL_DEFER_FORKSRV##"

/* Label slots: each instrumented translation unit reserves a unit header and
 * one byte per label in this (allocated, writable) section; a label's slot is
 * its byte's offset from the section start.  The label records of each unit
 * go, in the same order, into the non-allocated section FFCC_LABELDB_SECTION
 * as JSON lines.  The unit header and the records are written and read only
 * by ffcc's Python side: runtime/abi.py defines them. */
#define FFCC_LABEL_SECTION "__ffcc_labels"
#define FFCC_LABELDB_SECTION ".ffcc_labeldb"

#endif
