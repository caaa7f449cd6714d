"""The guard slot past the last record slot: what the host writes there, and which of its words a kernel changed.

The host ``Tracing`` allocates one record more than ``max_events``, a guard slot that no correct kernel writes: a
record that finds the buffer full is dropped (its store masked off), and so is a dropped range's end. At ``enable``
and ``reset`` the host writes ``GUARD_RECORD`` there: ``GUARD_WORD`` in every word, a pattern no record field takes
(above every clock reading and address, no duration kind, an id of no event), but for the ``event_id`` half, which
holds ``EMPTY_EVENT`` as every hole's does. ``guard_changes`` lists each word that differs from it afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from iris import context_layout
from iris.tracing.events import EMPTY_EVENT, FIELD_BY_NAME, FIELDS

GUARD_WORD = 0x6A09_E667_F3BC_C908  # what every guard word holds (but the event_id half)


def _int64(value: int) -> int:
    """``value``'s low 64 bits as a signed int64."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _guard_record() -> tuple[int, ...]:
    event = FIELD_BY_NAME["event_id"]
    half = ((1 << event.bits) - 1) << event.shift
    words = [GUARD_WORD] * context_layout.RECORD_WORDS
    words[event.word] = _int64((GUARD_WORD & ~half) | ((EMPTY_EVENT.value << event.shift) & half))
    return tuple(words)


GUARD_RECORD: tuple[int, ...] = _guard_record()  # the guard slot's words as the host writes them (int64 values)


def word_fields(word: int) -> tuple[str, ...]:
    """The fields record word ``word`` holds, low half first (``iris.tracing.events.FIELDS``)."""
    return tuple(f.name for f in sorted(FIELDS, key=lambda f: f.shift) if f.word == word)


class GuardWord(NamedTuple):
    """One word of the guard record that differs from ``GUARD_RECORD``: its index, the value found, the value the
    host wrote."""

    word: int
    found: int
    expected: int


def guard_changes(words: Sequence[int]) -> tuple[GuardWord, ...]:
    """Each word of the guard record ``words`` (``RECORD_WORDS`` int64 values, as read back) that differs from
    ``GUARD_RECORD``, in word order; empty when no kernel wrote the guard slot."""
    if len(words) != context_layout.RECORD_WORDS:
        raise ValueError(f"guard record of {len(words)} words; expected {context_layout.RECORD_WORDS} (one record)")
    pairs = zip((int(w) for w in words), GUARD_RECORD, strict=True)
    return tuple(GuardWord(k, found, want) for k, (found, want) in enumerate(pairs) if found != want)
