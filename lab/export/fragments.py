"""Rewrite a text that was streamed in fragments, so that no join of the fragments holds what the
rewrite removed (SPEC R4).

A model's answer arrives as deltas: ``"sk-pro"``, ``"j-AbC…"``, ``"…xyz"``. A
scanner that looks at one delta at a time finds no key in any of them,
while their join is the key. :func:`rewrite_fragments` works on the
assembled text instead: the caller rewrites the whole (secrets masked, home
paths replaced), and the fragments are cut again to match it, one for one,
so a stream keeps its number of events and the join of the new fragments is
exactly the rewritten text.

The changed region is the span between the longest common prefix and the
longest common suffix of the old and new texts: fragments wholly outside it
are kept as they were; the first fragment that reaches into it carries the
whole rewritten region, later ones inside it keep only their parts outside
it (possibly nothing). The common prefix and suffix are found by bisection
over slices compared in C: O(n log n) character comparisons, no Python loop per character.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def rewrite_fragments(fragments: Sequence[str], rewrite: Callable[[str], str]) -> list[str]:
    """``fragments`` re-cut so that their join is ``rewrite("".join(fragments))``.

    Args:
        fragments: the text's pieces in order (stream deltas).
        rewrite: a rewrite of the whole text (e.g. a secret scanner's redaction).

    Returns:
        As many fragments as given; the same list's values when ``rewrite``
        changes nothing.
    """
    old = "".join(fragments)
    new = rewrite(old)
    if new == old:
        return list(fragments)
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, limit=min(len(old), len(new)) - prefix)
    start, old_end, new_end = prefix, len(old) - suffix, len(new) - suffix
    out, at, placed = [], 0, False
    for fragment in fragments:
        begin, end = at, at + len(fragment)
        at = end
        if end <= start or (placed and begin >= old_end):
            out.append(fragment)  # wholly before the changed region, or after it
            continue
        head = fragment[: max(0, start - begin)]
        tail = fragment[max(0, old_end - begin):] if end > old_end else ""
        middle = "" if placed else new[start:new_end]
        placed = True
        out.append(head + middle + tail)
    if not placed:  # an empty text, or the change sits at the very end: the last fragment carries it
        if out:
            out[-1] += new[start:new_end]
        else:
            out.append(new[start:new_end])
    return out


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (bisection over slices compared in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str, *, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit`` (so it never overlaps the prefix)."""
    low, high = 0, max(0, limit)
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            low = mid
        else:
            high = mid - 1
    return low
