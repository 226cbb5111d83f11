"""The ffcc compiler driver.

``client`` is the entry point (it hands commands to the compile server, ``server``) and
``cli`` runs them; ``options`` and ``command_line`` read what was asked,
``plan`` turns it into backend commands (pure data), ``toolchain`` and
``runtime_cache`` find the compiler and build the C runtime,
``labelled_compile`` annotates sources (through ffcc.rewriters) and compiles them with
``labels``' preamble (what a label compiles to), ``label_db`` reads the label database
back from linked programs, ``project`` is the ``-o build/`` form, ``prune``
removes infeasible and trivial labels (``--prune``) and rebuilds project builds with fewer.
"""
