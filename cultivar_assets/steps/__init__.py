"""The pipeline's steps and reusing unchanged ones, without Dagster: what an asset declares about
its step (:mod:`.declarations`; the project's steps and the functions they name:
:mod:`.inputs`), planning a step from the graph derived in the Dagster layer (what it reads and
writes, :mod:`.plan`), the digests of code, packages and files (:mod:`.digests`), the runner's
reuse decisions (:mod:`.reuse`), naming the inputs that changed (:mod:`.changes`), and the step
records of Dagster runs launched outside the runner (:mod:`.launched_runs`)."""
