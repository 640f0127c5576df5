"""The built-in reference coding agent (SPEC H1–H6).

``run_agent`` drives one task: instructions and task prompt → model call →
tool calls (``tools``) under a ``Policy`` and a ``Budget`` → repeat, with
``compaction`` of long contexts; it returns an ``AgentResult`` holding the
stop reason, the agent's claim, usage and the ordered event log.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.agents.builtin.budget import Budget
    from lab.agents.builtin.loop import AgentSettings, run_agent
    from lab.agents.builtin.policy import Decision, Policy
    from lab.agents.builtin.prompt import DEFAULT_SYSTEM_PROMPT
    from lab.agents.builtin.result import AgentResult, Claim, StopReason
    from lab.agents.builtin.tool import Tool
    from lab.agents.builtin.tools import TOOLS, tool_schemas

# Loaded on first use: composing a configuration reads only the default prompt (``prompt``).
_EXPORTS = {"AgentResult": "result", "AgentSettings": "loop", "Budget": "budget", "Claim": "result",
            "DEFAULT_SYSTEM_PROMPT": "prompt", "Decision": "policy", "Policy": "policy",
            "StopReason": "result", "TOOLS": "tools", "Tool": "tool", "run_agent": "loop",
            "tool_schemas": "tools"}

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "TOOLS",
    "AgentResult",
    "AgentSettings",
    "Budget",
    "Claim",
    "Decision",
    "Policy",
    "StopReason",
    "Tool",
    "run_agent",
    "tool_schemas",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lab.agents.builtin' has no attribute {name!r}")
    return getattr(importlib.import_module(f"lab.agents.builtin.{_EXPORTS[name]}"), name)
