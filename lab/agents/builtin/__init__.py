"""The built-in reference coding agent (SPEC H1–H6).

``run_agent`` drives one task: instructions and task prompt → model call →
tool calls (``tools``) under a ``Policy`` and a ``Budget`` → repeat, with
``compaction`` of long contexts; it returns an ``AgentResult`` holding the
stop reason, the agent's claim, usage and the ordered event log.
"""

from __future__ import annotations

from lab.agents.builtin.budget import Budget
from lab.agents.builtin.loop import DEFAULT_SYSTEM_PROMPT, AgentSettings, run_agent
from lab.agents.builtin.policy import Decision, Policy
from lab.agents.builtin.result import AgentResult, Claim, StopReason
from lab.agents.builtin.tool import Tool
from lab.agents.builtin.tools import TOOLS, tool_schemas

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
