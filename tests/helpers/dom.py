"""A serialised HTML/SVG document as a tree of elements, to assert on elements and attributes (not on the text)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None = None
    content: list[Element | str] = field(default_factory=list)  # child elements and text, in document order

    @property
    def children(self) -> list[Element]:
        return [c for c in self.content if isinstance(c, Element)]

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def text(self) -> str:
        """The element's text, its descendants' included, whitespace collapsed."""
        return " ".join(self._raw().split())

    def _raw(self) -> str:
        return "".join(c if isinstance(c, str) else c._raw() for c in self.content)

    def iter(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        """Descendants (self included) with ``tag`` and/or class ``cls``, in document order."""
        return [e for e in self.iter() if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)]

    def by_id(self, ident: str) -> Element:
        found = [e for e in self.iter() if e.attrs.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def ancestor(self, tag: str) -> Element | None:
        node = self.parent
        while node is not None and node.tag != tag:
            node = node.parent
        return node

    def num(self, name: str) -> float:
        return float(self.attrs[name])


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.content.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.content.append(Element(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.content.append(data)


def parse(text: str) -> Element:
    """The element tree of ``text`` (the document's root, tag ``#document``)."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root
