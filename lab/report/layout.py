"""Where the texts of an inline SVG chart go, so that every one lies inside the SVG's viewBox.

The pages have no script to measure text, so a text's width is estimated from its characters
(:func:`text_px`), on the generous side: four classes of character width, each at least the widest
of its class in DejaVu Sans (what ``system-ui`` and ``sans-serif`` resolve to on many Linux systems,
and wider than the usual fonts of macOS and Windows), bold 15 % wider. A chart's :class:`Frame` is
computed from its texts (:func:`frame`): the label column from the longest task label, the column
right of the plot from the longest text beside a row, the legend and the title; nothing is a fixed
width but the plot itself. Labels longer than :data:`LABEL_CHARS` characters are cut (:func:`cut`);
the whole name is in each row's tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

PAD_PX = 8.0  # between a column of text and the plot
INSIDE_PX = 4.0  # from the plot's left end to a text inside it
LABEL_CHARS = 32
BOLD = 1.15  # bold (and font-weight 600) text is at most this much wider
NARROW = frozenset(" !'(),-./:;IJ[\\]fijlt|·′")
WIDE = frozenset("#%&+<=>@MW^mw~")
EM = {"narrow": 0.42, "upper": 0.8, "other": 0.65, "wide": 1.0}
"""Width of one character of each class, in em (font sizes): ``other`` is lower case letters, digits and the
rest of ASCII; every character outside ASCII but the narrow ones counts as wide."""


def char_em(char: str) -> float:
    """The estimated width of ``char`` in em (see :data:`EM`)."""
    if char in NARROW:
        return EM["narrow"]
    if char in WIDE or not char.isascii():
        return EM["wide"]
    return EM["upper"] if char.isupper() else EM["other"]


def text_px(text: str, size_px: float = 12.0, bold: bool = False) -> float:
    """A generous estimate of the width (px) of ``text`` drawn at ``size_px``; 0.0 for an empty text."""
    return sum(char_em(c) for c in text) * size_px * (BOLD if bold else 1.0)


def cut(name: str) -> str:
    """``name`` as a row label: at most :data:`LABEL_CHARS` characters, a cut one ends in an ellipsis."""
    return name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1] + "…"


def label_px(names: Iterable[str], bold: Iterable[str] = ()) -> float:
    """Width (px) of a label column: the widest :func:`cut` label among ``names`` (plain) and ``bold``."""
    widths = [text_px(cut(n)) for n in names] + [text_px(cut(n), bold=True) for n in bold]
    return math.ceil(max(widths, default=0.0))


@dataclass(frozen=True)
class Frame:
    """A chart's columns, in px from the SVG's left edge.

    Row labels end at ``label_px`` (text-anchor end); the plot runs from ``x0`` to ``x1``; the text beside
    a row starts at ``x1 + PAD_PX``; the legend starts at ``legend_x`` (on the title's line); the axis title
    is centred on ``axis_x``; ``width`` is the SVG's (and its viewBox's) width.
    """

    label_px: float
    x0: float
    plot_px: float
    legend_x: float
    axis_x: float
    width: float

    @property
    def x1(self) -> float:
        return self.x0 + self.plot_px

    @property
    def value_x(self) -> float:
        """Where the text beside a row starts."""
        return self.x1 + PAD_PX

    @property
    def inside_x(self) -> float:
        """Where a text inside the plot (a row without a figure) starts."""
        return self.x0 + INSIDE_PX


def frame(left: float, plot_px: float, *, ticks: Iterable[str] = (), values: Iterable[str] = (),
          inside: Iterable[str] = (), title: str = "", legend: str = "", axis_title: str = "") -> Frame:
    """The frame of a chart whose every text (as the template draws it) fits inside ``[0, width]``.

    Args:
        left: width (px) of the label column (:func:`label_px`).
        plot_px: the plot's width (px).
        ticks: the tick labels, each centred on its tick (the first at the plot's left end, the last at
            its right end).
        values: the texts beside the rows, starting ``PAD_PX`` right of the plot.
        inside: texts drawn inside the plot, starting ``INSIDE_PX`` right of its left end (a row's
            "nothing judged").
        title: the chart's title (bold), from x = 0.
        legend: the legend's text, on the title's line right of both the title and the plot.
        axis_title: the axis title, centred under the plot where it fits.
    """
    half_tick = max((text_px(t) / 2 for t in ticks), default=0.0)
    x0 = max(left + PAD_PX, half_tick)
    x1 = x0 + plot_px
    title_px = text_px(title, bold=True)
    legend_x = max(x1 + PAD_PX, title_px + 2 * PAD_PX) if legend else x1 + PAD_PX
    axis_px = text_px(axis_title)
    width = math.ceil(max(x1 + max(half_tick, PAD_PX),
                          x1 + PAD_PX + max((text_px(v) for v in values), default=0.0),
                          x0 + INSIDE_PX + max((text_px(t) for t in inside), default=0.0),
                          legend_x + text_px(legend) if legend else 0.0,
                          title_px, axis_px))
    axis_x = min(max((x0 + x1) / 2, axis_px / 2), width - axis_px / 2)
    return Frame(left, x0, plot_px, legend_x, axis_x, width)
