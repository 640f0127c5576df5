"""doit entry point: `doit eval suite=… k=… mode=…`, `record`, `ci`, `variants`, `compare`, `export`.

The task creators live in lab.build; this file only wires them up.
"""

from lab.build.ci import task_ci
from lab.build.cmdline import doit_config
from lab.build.compare_export import task_compare, task_export
from lab.build.graph import task_eval, task_record
from lab.build.variants import task_variants

DOIT_CONFIG = doit_config()

__all__ = ["DOIT_CONFIG", "task_ci", "task_compare", "task_eval", "task_export", "task_record",
           "task_variants"]
