"""A mapping bounded to its most recently used entries: what a long run keeps per case, without its
memory growing with the number of cases."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Hashable, TypeVar

__all__ = ["Recent"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(OrderedDict[K, V]):
    """A mapping that keeps only its *size* most recently set or read entries."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __getitem__(self, key: K) -> V:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def get(self, key: K, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
