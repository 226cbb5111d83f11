/* ffcc_native.h - the C hot loop of ffuzz, as seen from Python.
 *
 * This file is fed verbatim to cffi's cdef, so it holds only plain
 * declarations and integer #defines: no include guards, no #include, no
 * macros with expressions.  C files include <stdint.h> and <stddef.h> first.
 *
 * Division of labour: Python picks a queue entry, a target branch and a mask,
 * then asks for one stage (havoc, a deterministic stage, the mask
 * computation); C runs that stage's executions back to back and returns only
 * when it has something to report (new coverage, a new crash or hang), when
 * the stage is over, or when the per-call execution or time limit is reached
 * (or a signal arrives: see ffcc_engine_set_interrupt_fd) so that Python can
 * check the clock and its signal handlers.  Nothing in Python runs per
 * execution.
 */

/* Mutation mask: one byte per input position (len + 1 entries, the last one
 * stands for "append at the end").  A bit set means the mutation category
 * at that position kept the target branch hit (FairFuzz Algorithm 3). */
#define FFCC_MASK_OVERWRITE 1
#define FFCC_MASK_INSERT 2
#define FFCC_MASK_DELETE 4

/* Outcome of one execution. */
#define FFCC_RUN_OK 0
#define FFCC_RUN_TIMEOUT 1
#define FFCC_RUN_CRASH 2
#define FFCC_RUN_ERROR 3

/* Result of starting the forkserver. */
#define FFCC_START_OK 0
#define FFCC_START_SPAWN_FAILED 1
#define FFCC_START_EXEC_FAILED 2
#define FFCC_START_NO_HELLO 3
#define FFCC_START_BAD_HELLO 4
#define FFCC_START_TARGET_ERROR 5
#define FFCC_START_MAP_TOO_BIG 6

/* Why a stage call returned. */
#define FFCC_STOP_LIMIT 0
#define FFCC_STOP_FINISHED 1
#define FFCC_STOP_NEW_PATH 2
#define FFCC_STOP_CRASH 3
#define FFCC_STOP_HANG 4
#define FFCC_STOP_ERROR 5

/* Stage kinds.  Bit flips never look at the mask (FairFuzz README). */
#define FFCC_STAGE_HAVOC 0
#define FFCC_STAGE_MASK 1
#define FFCC_STAGE_FLIP1 2
#define FFCC_STAGE_FLIP2 3
#define FFCC_STAGE_FLIP4 4
#define FFCC_STAGE_FLIP16 5
#define FFCC_STAGE_FLIP32 6
#define FFCC_STAGE_ARITH8 7
#define FFCC_STAGE_ARITH16 8
#define FFCC_STAGE_ARITH32 9
#define FFCC_STAGE_INTEREST8 10
#define FFCC_STAGE_INTEREST16 11
#define FFCC_STAGE_INTEREST32 12
#define FFCC_STAGE_TOKEN_OVERWRITE 13
#define FFCC_STAGE_TOKEN_INSERT 14

/* Stage flags. */
#define FFCC_STAGE_SHADOW 1 /* no side effects: nothing saved, hit counts untouched */

typedef struct ffcc_engine ffcc_engine;

/* Zero-copy views of the engine's maps; valid until ffcc_engine_free. */
struct ffcc_views {
    uint8_t *trace;        /* the shared map, classified after each run */
    uint8_t *virgin;       /* AFL virgin bits for queue-worthy coverage */
    uint8_t *virgin_crash; /* virgin bits of simplified crash traces */
    uint8_t *virgin_hang;  /* virgin bits of simplified hang traces */
    uint8_t *var_bytes;    /* 1 where calibration saw the map vary */
    uint32_t *branch_hits; /* FairFuzz numHits: inputs that hit each index */
    uint8_t *calibrated;   /* classified trace of the last calibration's first run */
    uint32_t map_size;
};

struct ffcc_counters {
    uint64_t execs;           /* all executions */
    uint64_t crashes;         /* all crashing executions, unique or not */
    uint64_t hangs;           /* all timeouts, unique or not */
    uint32_t slowest_exec_ms; /* the slowest execution that did not time out */
};

/* One stage, owned by Python, resumable across calls. */
struct ffcc_stage {
    /* set by Python */
    int kind;                 /* FFCC_STAGE_* */
    uint32_t flags;           /* FFCC_STAGE_SHADOW or 0 */
    const uint8_t *input;     /* the parent */
    uint32_t len;             /* its length */
    uint8_t *mask;            /* len + 1 bytes or NULL; the MASK stage fills it */
    const int64_t *also;      /* MASK stage: more branches the same probes make masks for, or NULL */
    uint32_t also_count;      /* how many */
    uint8_t *also_masks;      /* their masks, also_count x (len + 1) bytes back to back */
    const uint8_t *splice;    /* havoc only: second parents back to back, or NULL */
    const uint32_t *splice_lens; /* their lengths */
    uint32_t splices;         /* how many second parents */
    uint64_t per_splice;      /* children made from each */
    uint64_t plain;           /* havoc with splices: children of the parent alone first */
    int64_t target;           /* map index of the target branch, -1 for none */
    uint64_t budget;          /* havoc: executions in the whole stage (plain + splices x per_splice) */
    uint64_t call_limit;      /* executions per call before returning */
    uint32_t call_ms;         /* wall time per call before returning, checked between batches (0: none) */
    uint32_t timeout_ms;      /* per execution */
    uint32_t cycle;           /* havoc block level: 1 small blocks, 2 also medium, 3+ also large */
    /* kept by C between calls */
    uint64_t cursor;          /* next mutant (deterministic) */
    uint64_t execs;           /* executions run by this stage so far */
    uint64_t skipped;         /* havoc rounds the mask left no room for (not run) */
    uint64_t target_hits;     /* executions whose child hit the target */
    uint32_t spliced;         /* havoc with splices: 1 + the second parent spliced in the work buffer */
    uint32_t spliced_len;     /* the spliced parent's length */
    uint32_t split;           /* where its splice cut */
    int finished;             /* no children left */
    /* the last report */
    int stop;                 /* FFCC_STOP_*, as returned */
    int new_bits;             /* 1 = new hit counts, 2 = new edges */
    int signal;               /* crash signal */
    int32_t partner;          /* havoc with splices: the reported child's second parent, -1 none */
    int64_t position;         /* deterministic stages: mutated byte */
    const uint8_t *out;       /* the reported input */
    uint32_t out_len;         /* its length */
};

struct ffcc_calibration {
    int status;               /* FFCC_RUN_* of the first run */
    int signal;               /* the signal that killed the first run */
    int new_bits;             /* best has_new_bits over the runs */
    int variable;             /* the map differed between runs */
    uint32_t runs;            /* runs done (fewer when one failed) */
    uint64_t exec_us;         /* mean wall time per run */
    uint64_t checksum;        /* hash of the first classified trace */
    uint32_t bitmap_size;     /* non-zero map bytes of the first run */
};

ffcc_engine *ffcc_engine_new(uint32_t shm_size, uint64_t seed);
void ffcc_engine_free(ffcc_engine *e);
int ffcc_engine_shm_id(ffcc_engine *e);
int ffcc_engine_shm_fuzz_id(ffcc_engine *e);
int ffcc_engine_batch_shm_id(ffcc_engine *e);
void ffcc_engine_views(ffcc_engine *e, struct ffcc_views *out);
void ffcc_engine_counters(ffcc_engine *e, struct ffcc_counters *out);
int ffcc_engine_add_token(ffcc_engine *e, const uint8_t *data, uint32_t len);
uint32_t ffcc_engine_token_count(ffcc_engine *e);
uint32_t ffcc_engine_auto_token_count(ffcc_engine *e);
void ffcc_engine_set_crash_exitcode(ffcc_engine *e, int code);
/* A non-blocking fd that becomes readable when the fuzzer gets a signal
 * (Python's signal.set_wakeup_fd): a stage then kills the running child and
 * returns at once; its unfinished children are made again on the next call. */
void ffcc_engine_set_interrupt_fd(ffcc_engine *e, int fd);
/* Why the last FFCC_RUN_ERROR / FFCC_STOP_ERROR happened, one line ("" if unknown). */
const char *ffcc_engine_error(ffcc_engine *e);

/* Forkserver: spawn argv[0], speak either hello, size the maps.  On error,
 * errbuf holds one line; FFCC_START_MAP_TOO_BIG leaves the needed size in
 * *map_size so the caller can retry with a larger engine. */
int ffcc_fsrv_start(ffcc_engine *e, char **argv, char **envp,
                    const char *input_path, int use_stdin,
                    uint64_t mem_limit_mb, uint32_t init_timeout_ms,
                    int show_child_output, uint32_t *map_size,
                    char *errbuf, size_t errlen);
void ffcc_fsrv_stop(ffcc_engine *e);
int ffcc_fsrv_uses_shm_input(ffcc_engine *e);
/* Children per request: > 1 when the target runs batches (ffcc_protocol.h). */
int ffcc_fsrv_batch_size(ffcc_engine *e);

/* Run an input several times: timing, stability, new coverage.  Updates the
 * virgin map; counts branch hits once when count_hits is set. */
int ffcc_calibrate(ffcc_engine *e, const uint8_t *buf, uint32_t len,
                   uint32_t runs, uint32_t timeout_ms, int count_hits,
                   struct ffcc_calibration *out);

/* Record a crash or hang trace (resume) in its virgin map. */
int ffcc_note_fault(ffcc_engine *e, const uint8_t *buf, uint32_t len,
                    uint32_t timeout_ms, int *status);

/* Whether the trace the last single run left, which ended in status (a crash or
 * a hang, else 0), is new to that fault's virgin map, which it then joins. */
int ffcc_last_fault_is_new(ffcc_engine *e, int status);

/* Run (a slice of) a stage; see FFCC_STOP_*.  A crash outside every case of a
 * batch (a persistent child that crashes at exit, armed by an earlier case) is
 * reported as FFCC_STOP_CRASH of the case that reproduces it alone. */
int ffcc_stage_run(ffcc_engine *e, struct ffcc_stage *st);

/* Replay: run n inputs, each once on its own map, in order, many per request
 * when the target runs batches.  Input i is lens[i] bytes, right after input
 * i - 1 (the first at data).  statuses[i] gets its FFCC_RUN_*, and
 * traces + i * map_size its classified trace.  An input that crashes or hangs
 * does not end the replay: the next runs in a fresh child.  Nothing is judged
 * (virgin maps and hit counts stay as they are).  FFCC_RUN_OK, or
 * FFCC_RUN_ERROR when the target could not be run (*done inputs ran). */
int ffcc_replay(ffcc_engine *e, const uint8_t *data, const uint32_t *lens, uint32_t n,
                uint32_t timeout_ms, int *statuses, uint8_t *traces, uint32_t *done);

/* Trim buf in place while the trace keeps its checksum, or, with
 * target >= 0, while the target branch stays hit (FairFuzz -r). */
int ffcc_trim(ffcc_engine *e, uint8_t *buf, uint32_t *len, int64_t target,
              uint64_t checksum, uint32_t timeout_ms, uint64_t *execs);

/* One stacked havoc mutation without running it (tests, tools).  buf and
 * mask need room for FFCC_SHM_FUZZ_MAX (+1) bytes; mask may be NULL. */
uint32_t ffcc_havoc_mutate(ffcc_engine *e, uint8_t *buf, uint32_t len,
                           uint8_t *mask, uint32_t cycle);

/* AFL's splice: a's bytes up to a random split between the first and last
 * differing byte, then b's.  out_mask (when not NULL) keeps a_mask for a's
 * part (all allowed if a_mask is NULL) and allows everything in b's.
 * Returns the length (b_len), or 0 when a and b differ too little. */
uint32_t ffcc_splice(ffcc_engine *e, const uint8_t *a, uint32_t a_len, const uint8_t *a_mask,
                     const uint8_t *b, uint32_t b_len, uint8_t *out, uint8_t *out_mask,
                     uint32_t *split);
