"""What a command agent's run means, from what its gateway saw (SPEC X3, M4, P1).

The gateway reads every answer with the lab's one wire layer
(``lab.providers.answer``), so a command agent's run is judged as the
built-in agent's is:

* a provider fault that persisted past the retries (an outage, a rate limit,
  an in-band error, ``response.failed``, a stream without its terminal event,
  an oversize or undecodable answer) makes the run ``status: error`` with
  ``error.kind: provider`` and the fault's cause — an infrastructure error:
  left out of the rates, executed again by the next command, counted by the
  three-errors-in-a-row rule;
* an agent that never reached the model (no model call served, and some
  request refused or unserved: a wrong path such as ``/v1/v1/chat/completions``,
  a wrong token, a body that does not decode) is ``status: error`` with
  ``error.kind: agent_setup``, naming the requests it made;
* usage not reported by some call (or reported as zeros that cannot be
  measurements, or never seen: a stream the agent hung up on before its
  end) is a ``usage_unreported`` incident, and an answer with no
  text and no tool call an ``empty_response`` incident, as for the built-in agent.
"""

from __future__ import annotations

from typing import Any


def gateway_error(stats: Any, halt: Any, agent: str) -> dict[str, Any] | None:
    """The run's ``error`` block when the gateway's account makes the run an infrastructure error, else None.

    Args:
        stats: the run's ``lab.gateway.GatewayStats``.
        halt: the gateway's ``Halt``, or None.
        agent: the agent's name (for the message).
    """
    faults = list(stats.faults)
    if faults:
        first = faults[0]
        more = f" ({len(faults) - 1} more call(s) failed too)" if len(faults) > 1 else ""
        tries = first["attempts"]
        error = {"kind": "provider", "cause": first["cause"],
                 "message": f"call {first['callIndex']}: {first['message']} after {tries} attempt"
                            f"{'s' if tries != 1 else ''}{more}",
                 "callIndex": first["callIndex"]}
        if first.get("status") is not None:
            error["status"] = first["status"]
        if first.get("server") is not None:
            error["server"] = first["server"]
        return error
    if halt is not None and getattr(halt, "reason", None) == "upstream_fault":
        return {"kind": "provider", "cause": "server", "message": halt.detail}
    if stats.calls == 0 and stats.unserved_count:
        tried = ", ".join(stats.unserved)
        return {"kind": "agent_setup", "cause": "unserved_requests",
                "message": f"agent {agent} never reached the model: {stats.unserved_count} request(s) refused "
                           f"or not served: {tried} (the gateway serves POST /v1/chat/completions and "
                           "POST /v1/responses below the base URL it was given, with the run's token)",
                "unserved": list(stats.unserved)}
    return None


def gateway_incidents(stats: Any) -> list[dict[str, Any]]:
    """Incidents of the run, in the built-in agent's shapes (``{"type": "incident", "kind", "detail"}``)."""
    incidents: list[dict[str, Any]] = []
    if stats.calls_without_usage:
        zeros = stats.zero_usage_calls
        detail = (f"{stats.calls_without_usage} of {stats.calls_with_usage + stats.calls_without_usage} "
                  "answered call(s) reported no usage")
        if zeros:
            detail += (f" ({zeros} reported 0 tokens for a call that carried a prompt and produced output: "
                       "not a measurement, read as not reported)")
        abandoned = stats.abandoned_calls
        if abandoned:
            detail += (f" ({abandoned} abandoned before the provider reported it: the agent hung up "
                       "mid-stream, or the run ended with the call in flight)")
        incidents.append({"type": "incident", "kind": "usage_unreported",
                          "detail": detail + "; the run's usage is not reported (never $0)"})
    if stats.empty_answers:
        incidents.append({"type": "incident", "kind": "empty_response",
                          "detail": f"{stats.empty_answers} answer(s) with no content and no tool call"})
    if stats.unserved_count and stats.calls:
        incidents.append({"type": "incident", "kind": "unserved_requests",
                          "detail": f"{stats.unserved_count} request(s) refused or not served: "
                                    + ", ".join(stats.unserved)})
    return incidents
