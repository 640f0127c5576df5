"""Which tool effects a run may use (SPEC H3).

A task's policy is ``mode`` (ask | auto | full) plus ``allow`` (effects granted
up front) and ``readOnly``. The harness is headless, so nobody can answer an
approval request: in *ask* mode an effect outside ``allow`` is asked for and
always denied (the caller records an ``approval`` event and an
``approval_denied`` incident). In *auto* mode it is refused without asking;
*full* grants every effect. ``read`` is always granted; ``readOnly`` refuses
``write`` in every mode. Whether the user permits *full* at all
(``allow_suite_full``) is checked when the suite is loaded, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from lab.agents.builtin.tool import EFFECTS

Mode = Literal["ask", "auto", "full"]
MODES: tuple[Mode, ...] = ("ask", "auto", "full")


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one effect.

    Attributes:
        granted: the tool may run.
        asked: an approval was requested (ask mode); the caller records an
            ``approval`` event and, when denied, an ``approval_denied`` incident.
        reason: why it was refused (shown to the model after ``error: ``); ""
            when granted.
    """

    granted: bool
    asked: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Policy:
    """A task's permission policy.

    Attributes:
        mode: ``ask``, ``auto`` or ``full``.
        allow: effects granted without asking (``write``, ``process`` …).
        read_only: refuse every ``write`` effect, whatever the mode.

    Raises:
        ValueError: unknown mode or effect name (names it).
    """

    mode: Mode = "auto"
    allow: frozenset[str] = frozenset()
    read_only: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"policy.mode: expected one of {list(MODES)}, got {self.mode!r}")
        unknown = sorted(set(self.allow) - set(EFFECTS))
        if unknown:
            raise ValueError(f"policy.allow: unknown effect(s) {unknown}; known: {list(EFFECTS)}")

    def decide(self, effect: str) -> Decision:
        """Grant or refuse one effect.

        Raises:
            ValueError: ``effect`` is not one of ``EFFECTS``.
        """
        if effect not in EFFECTS:
            raise ValueError(f"unknown effect {effect!r}; known: {list(EFFECTS)}")
        if effect == "read":
            return Decision(True)
        if self.read_only and effect == "write":
            return Decision(False, reason="refused: this task is read-only (no write effect)")
        if self.mode == "full" or effect in self.allow:
            return Decision(True)
        if self.mode == "ask":
            return Decision(False, asked=True, reason=(
                f"denied: the {effect} effect needs approval and nobody can approve "
                "in a headless run"))
        return Decision(False, reason=(
            f"refused: the policy does not allow the {effect} effect "
            f"(mode auto, allow {sorted(self.allow)})"))

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "allow": sorted(self.allow), "readOnly": self.read_only}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        """Build from a suite's ``policy`` object (``mode``, ``allow``, ``readOnly``)."""
        return cls(mode=data.get("mode", "auto"), allow=frozenset(data.get("allow", ())),
                   read_only=bool(data.get("readOnly", False)))
