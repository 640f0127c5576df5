"""doit entry point: `doit eval suite=… k=… mode=…`, `record`, `ci`, `variants`, `compare`, `export`.

Task creators live in lab.tasks; this file only wires them up.
"""

from lab.tasks import doit_config, task_ci, task_eval, task_record
from lab.tasks_share import task_compare, task_export
from lab.variants import task_variants

DOIT_CONFIG = doit_config()

__all__ = ["DOIT_CONFIG", "task_ci", "task_compare", "task_eval", "task_export", "task_record",
           "task_variants"]
