"""One model's partition of the job ``evaluate_model`` in a process of its own, as a machine of a
cluster runs it: ``python storage_partition.py MODEL GO OUT``. The settings come from
``$CULTIVAR_CONFIG``, the Dagster instance from ``$DAGSTER_HOME``. After its imports the process
writes ``OUT.ready`` and waits until the file GO exists (so that several processes start their
runs at the same moment), then writes to OUT (JSON) when its run started and ended, its run's
id, whether it succeeded and its run's log messages (tests/test_storage_four_processes.py)."""

import json
import sys
import time
from pathlib import Path


def main(model_id: str, go: str, out: str) -> int:
    import dagster as dg

    from cultivar_assets.definitions import defs

    job = defs.get_job_def("evaluate_model")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("models", [model_id])
        Path(f"{out}.ready").touch()
        while not Path(go).exists():
            time.sleep(0.05)
        began = time.time()
        result = job.execute_in_process(partition_key=model_id, instance=instance,
                                        raise_on_error=False)
        ended = time.time()
        messages = [entry.user_message for entry in instance.all_logs(result.run_id)]
    with open(out, "w") as handle:
        json.dump({"model": model_id, "began": began, "ended": ended, "run_id": result.run_id,
                   "success": result.success, "messages": messages}, handle)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
