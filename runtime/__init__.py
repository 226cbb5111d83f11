"""The C runtime linked into every ffcc binary, shipped as sources.

The driver (ffcc.instrument) compiles these once per compiler into a cache.
``CORE_SOURCES`` make the runtime proper (map, hooks, forkserver);
``SHARED_STUB`` is linked into shared objects; ``FUZZER_MAIN`` is the main()
for libFuzzer-style harnesses, linked from an archive so a program's own main
wins; ``CMPLOG`` is the comparison log of ``--cmplog`` builds.  ``PROTOCOL_HEADER``
and ``NAMES_HEADER`` are the contract the fuzzer's native core reads too.

``abi`` is the binary's ABI as the Python tools see it: the constants of those
headers (read from them, never retyped), the label slot and map layout, and the
label database's file name, format, reader and writer; ffcc.instrument and
ffcc.fuzzer both use it.  ``headers`` parses the headers' defines; ``files``
writes every result file atomically.
"""

from pathlib import Path

RUNTIME_DIR = Path(__file__).resolve().parent
CORE_SOURCES = (RUNTIME_DIR / "ffcc_map.c", RUNTIME_DIR / "ffcc_forkserver.c")
SHARED_STUB = RUNTIME_DIR / "ffcc_shared_stub.c"
FUZZER_MAIN = RUNTIME_DIR / "ffcc_fuzzer_main.c"
CMPLOG = RUNTIME_DIR / "ffcc_cmplog.c"
PROTOCOL_HEADER = RUNTIME_DIR / "ffcc_protocol.h"
NAMES_HEADER = RUNTIME_DIR / "ffcc_names.h"
HEADERS = (PROTOCOL_HEADER, NAMES_HEADER, RUNTIME_DIR / "ffcc_rt.h")
