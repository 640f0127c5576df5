"""The distribution of a per-run figure over one task's runs, in bounded memory (five-number summary).

index.html draws, per task, the spread of tokens and wall time per run as a
box plot: minimum, first quartile, median, third quartile, maximum. A
:class:`Distribution` is fed one value per run and summarises them:

- up to ``EXACT_RUNS`` values (10 000) it keeps them all and the quartiles
  are exact: linear interpolation between order statistics, position
  q·(n − 1) (Hyndman & Fan (1996) definition 7, "Sample quantiles in
  statistical packages", The American Statistician 50(4):361-365; numpy's
  and ``statistics.quantiles(method="inclusive")``'s default), so the median
  is the usual one;
- past that it moves them into a DDSketch (Masson, Rim & Lee (2019),
  "DDSketch: a fast and fully-mergeable quantile sketch with relative-error
  guarantees", PVLDB 12(12):2195-2205; the ``ddsketch`` package) of
  relative accuracy ``RELATIVE_ACCURACY`` (1 %) and at most ``SKETCH_BINS``
  bins: each quartile is then within 1 % (relative) of the order statistic
  of rank ⌊q·(n − 1)⌋, clamped to [min, max]. The minimum and maximum stay
  exact.

So a task's summary costs at most 80 kB (10 000 eight-byte values) whatever
its number of runs, and a report holds one task's at a time. The values
come in report order (task, repetition, seed), so the summary, like the
rest of the report, does not depend on the order the runs finished in.
"""

from __future__ import annotations

import statistics
from array import array
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddsketch import LogCollapsingLowestDenseDDSketch

EXACT_RUNS = 10_000
RELATIVE_ACCURACY = 0.01
SKETCH_BINS = 2048
QUARTILES = (0.25, 0.5, 0.75)


class Distribution:
    """Minimum, quartiles and maximum of the values added (non-negative numbers: tokens, milliseconds).

    Args:
        exact_runs: values kept for exact quartiles before the sketch takes over.
    """

    def __init__(self, exact_runs: int = EXACT_RUNS) -> None:
        self.count = 0
        self._exact_runs = exact_runs
        self._values: array[float] | None = array("d")
        self._sketch: LogCollapsingLowestDenseDDSketch | None = None
        self._low = self._high = 0.0

    def add(self, value: float) -> None:
        """One run's value."""
        value = float(value)
        if self.count == 0 or value < self._low:
            self._low = value
        if self.count == 0 or value > self._high:
            self._high = value
        self.count += 1
        if self._values is not None:
            self._values.append(value)
            if len(self._values) > self._exact_runs:
                self._to_sketch()
        else:
            assert self._sketch is not None
            self._sketch.add(value)

    def _to_sketch(self) -> None:
        from ddsketch import LogCollapsingLowestDenseDDSketch  # only for a task of more than EXACT_RUNS runs

        self._sketch = LogCollapsingLowestDenseDDSketch(relative_accuracy=RELATIVE_ACCURACY, bin_limit=SKETCH_BINS)
        assert self._values is not None
        for value in self._values:
            self._sketch.add(value)
        self._values = None

    def summary(self) -> dict[str, Any] | None:
        """{runs, min, q1, median, q3, max, exact} (floats in the values' unit); None when nothing was added.

        ``exact`` is false when the quartiles come from the sketch (more than ``EXACT_RUNS`` values).
        """
        if self.count == 0:
            return None
        if self._values is not None:
            ordered = sorted(self._values)
            cuts = (statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1
                    else [ordered[0]] * 3)
        else:
            assert self._sketch is not None
            cuts = [min(max(float(self._sketch.get_quantile_value(q) or 0.0), self._low), self._high)
                    for q in QUARTILES]
        q1, median, q3 = (float(c) for c in cuts)
        return {"runs": self.count, "min": self._low, "q1": q1, "median": median, "q3": q3, "max": self._high,
                "exact": self._values is not None}
