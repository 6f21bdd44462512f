"""A dtype view's elements: the bit patterns of the storage's elements, read as another dtype.

``t.view(torch.int32)`` (paddle ``x.view('int32')``) looks at the same memory as ``t``; its elements are
the bytes of ``t``'s elements taken as int32.  The reference keeps one value per storage position (of the
dtype the storage was made with), so a dtype view holds how it reads those values and how it writes
them back: cast each to the stored dtype, take its bytes, read them as the seen dtype.  A narrower seen
dtype (float32 as uint8) has several elements per storage position, each one *part* of it; a wider one
(float32 as float64) has each element *span* several storage positions in a row, from the one the
element is placed at.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Reinterpretation"]


@dataclass(frozen=True)
class Reinterpretation:
    """How a dtype view reads storage: *stored*, the dtype the storage's values have; *seen*, the dtype
    its elements are read as; *part*, for a narrower one, which part of its storage element each element
    of the view is (an array of the view's shape), else None.  An element of a wider one is placed at
    the first of the storage positions it spans (``spread``)."""

    stored: np.dtype
    seen: np.dtype
    part: np.ndarray | None = None

    @property
    def ratio(self) -> int:
        """Elements per storage position (1 for as wide or wider)."""
        return max(1, self.stored.itemsize // self.seen.itemsize)

    @property
    def span(self) -> int:
        """Storage positions per element (1 for as wide or narrower)."""
        return max(1, self.seen.itemsize // self.stored.itemsize)

    def spread(self, positions: np.ndarray) -> np.ndarray:
        """The storage positions the elements placed at *positions* cover: *positions* itself unless the
        seen dtype is wider, else one more trailing axis of *span* positions in a row."""
        if self.span == 1:
            return positions
        return positions[..., None] + np.arange(self.span)

    def _words(self, raw: np.ndarray) -> np.ndarray:
        """Each stored value as its parts in the seen dtype: an array of shape (n, ratio)."""
        return np.ascontiguousarray(np.asarray(raw).reshape(-1).astype(self.stored)).reshape(-1, 1).view(self.seen)

    def _parts(self, size: int) -> np.ndarray:
        return np.zeros(size, dtype=np.intp) if self.part is None else self.part.reshape(-1)

    def read(self, raw: np.ndarray) -> np.ndarray:
        """The view's elements, given the stored values at its positions (``spread``)."""
        if self.span > 1:
            whole = np.ascontiguousarray(np.asarray(raw).astype(self.stored)).view(self.seen)
            return whole[..., 0].astype(np.float64)
        words = self._words(raw)
        values = words[np.arange(words.shape[0]), self._parts(words.shape[0])]
        return values.astype(np.float64).reshape(np.shape(raw))

    def encode(self, values: np.ndarray, positions: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The storage positions a write of the view's elements at *positions* lands on, and what storage
        holds there after it (in *data*'s dtype): a part written changes that part of its storage element
        only; a wider element, every position it spans."""
        if self.span > 1:
            landing = self.spread(positions).reshape(-1)
            new = _cast(np.asarray(values).reshape(-1), self.seen)
            return landing, np.ascontiguousarray(new).view(self.stored).astype(data.dtype)
        flat = positions.reshape(-1)
        parts = self._parts(flat.size)
        new = _cast(np.asarray(values).reshape(-1), self.seen)
        keys = flat.astype(np.int64) * self.ratio + parts
        unique_keys, at = np.unique(keys, return_inverse=True)
        landed = np.zeros(unique_keys.size, dtype=self.seen)
        landed[at] = new
        if not np.array_equal(landed[at], new, equal_nan=self.seen.kind == "f"):
            raise ValueError("an in-place write through a view that overlaps itself gives one memory location "
                             "different values: the result depends on the order of the writes")
        unique_positions, which = np.unique(flat, return_inverse=True)
        words = self._words(data[unique_positions]).copy()
        words[which, parts] = new
        stored = words.reshape(-1).view(self.stored)  # one stored value per unique position
        return flat, stored.astype(data.dtype)[which]

    def taken(self, rel: np.ndarray) -> "Reinterpretation":
        """The same reading for the elements at flat indices *rel* of this view (a view of the view)."""
        part = None if self.part is None else self.part.reshape(-1)[rel]
        return Reinterpretation(self.stored, self.seen, part)


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Values computed in float64 as elements of *dtype*: an integer dtype wraps around, as the
    frameworks' integer arithmetic does."""
    if dtype.kind in "iu":
        return values.astype(np.int64).astype(dtype)
    return values.astype(dtype)
