"""doit entry point: `doit eval suite=smoke-coding k=5 mode=replay`, `doit record suite=…`, `doit ci`.

Task creators live in lab.tasks; this file only wires them up.
"""

from lab.tasks import doit_config, task_ci, task_eval, task_record
from lab.variants import task_variants

DOIT_CONFIG = doit_config()

__all__ = ["DOIT_CONFIG", "task_ci", "task_eval", "task_record", "task_variants"]
