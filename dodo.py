"""doit entry point: `doit eval suite=… k=… mode=…`, `record`, `ci`, `variants`, `compare`, `export`.

The task creators live in lab.build; this file only wires them up.
"""

import atexit
import gc

from lab.build.ci import task_ci
from lab.build.cmdline import doit_config
from lab.build.compare_export import task_compare, task_export
from lab.build.graph import task_eval, task_record
from lab.build.variants import task_variants
from lab.console import tolerate_closed_console

DOIT_CONFIG = doit_config()
tolerate_closed_console()  # `doit eval … | head -1`, `2>&1 | head`: the eval goes on when the reader goes away

# At exit the interpreter's last garbage collections walk every object the command made
# (Hydra's, the suite's, the runs'): 0.05-0.1 s of CPU for an eval. Frozen, they are left to
# the OS with the rest of the process; files, the DB and the pooled connections are closed
# before (each by its own `with` or atexit handler). `lab …` does the same (lab.cli.main).
atexit.register(gc.freeze)

__all__ = ["DOIT_CONFIG", "task_ci", "task_compare", "task_eval", "task_export", "task_record",
           "task_variants"]
