"""The per-run OpenAI-compatible HTTP server owned by the lab (SPEC G1, G4).

For each run of a command agent the lab starts a :class:`Gateway` on
``127.0.0.1`` and/or a unix socket; the agent gets its base URL and a per-run
token, never the real key. Every model call (chat completions and the
Responses API, streamed or not) is metered against the run's budget and goes
to a pluggable :class:`Upstream`: live (httpx to the real provider),
recording (live plus an observer), or replay (from recordings, no network).
``relay.py`` is a standalone script run inside a sandbox to reach the unix
socket from ``127.0.0.1:PORT``.

May import: ``lab.errors``, ``lab.providers``, ``lab.replay``, the standard
library and third-party packages (aiohttp, httpx, httpx-sse); nothing above
it (no config, execute, agents, sandbox).
"""

from lab.gateway.errors import GatewayError, UpstreamError
from lab.gateway.exchange import SseEvent, UpstreamReply
from lab.gateway.meter import BudgetName, GatewayBudget, GatewayStats
from lab.gateway.server import Gateway, GatewayAddress, Halt, HaltReason, RetryPolicy, new_token
from lab.gateway.upstream import (
                                  LiveUpstream,
                                  RecordedCall,
                                  RecordingUpstream,
                                  ReplayUpstream,
                                  Upstream,
                                  UpstreamRequest,
)

__all__ = [
    "BudgetName",
    "Gateway",
    "GatewayAddress",
    "GatewayBudget",
    "GatewayError",
    "GatewayStats",
    "Halt",
    "HaltReason",
    "LiveUpstream",
    "RecordedCall",
    "RecordingUpstream",
    "ReplayUpstream",
    "RetryPolicy",
    "SseEvent",
    "Upstream",
    "UpstreamError",
    "UpstreamReply",
    "UpstreamRequest",
    "new_token",
]
