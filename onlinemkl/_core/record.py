"""A learner's records as one compiled object: what a per-example call from Python passes.

Numba's dispatcher types and unboxes every array of a call's arguments: it fingerprints each
one's type, and wraps each in a memory record of its own for the call.  A proximal learner's
records (:class:`~onlinemkl.proximal._step.ProxRows`, ...) hold about 30 arrays, and that costs
about 2.5 us per call: more than a small model's whole compiled prediction.  A
:class:`StateRecord` holds the records, as the plain tuples the engines build
(:func:`~onlinemkl.engine.plain`), in one Numba structure.  A call then unboxes one object, and
the entry point reads the tuples back from it (:func:`~onlinemkl.proximal._step.fobos_run`).

The arrays are shared, not copied: the record refers to the engine's own arrays, so the
compiled code's writes are the engine's state, and an engine that replaces an array builds a new
record (its ``_forget_records`` drops the old one).
"""

from __future__ import annotations

from numba import types
from numba.core.extending import overload
from numba.experimental import structref

from .._config import njit

__all__ = ["StateRecord", "StateRecordType", "state_record"]


@structref.register
class StateRecordType(types.StructRef):
    """The Numba type of a :class:`StateRecord`: one field, ``records``, a tuple of plain tuples."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StateRecord(structref.StructRefProxy):
    """The Python side of a state record, made by :func:`state_record`.

    ``records`` is the tuple of records it was built from, for the Python code that needs their
    types (a compile plan, :mod:`onlinemkl._split`); the compiled code reads its own field.
    """

    records: tuple


structref.define_boxing(StateRecordType, StateRecord)


class _PlainRecord:
    """What :func:`new_state_record` makes when Numba runs as Python (``NUMBA_DISABLE_JIT=1``)."""

    def __init__(self, records):
        self.records = records


def _new_record(records):
    """A record of ``records``: compiled code runs its overload, Python (the JIT disabled) this."""
    return _PlainRecord(records)


@overload(_new_record)
def _new_record_impl(records):
    record_type = StateRecordType([("records", records)])

    def impl(records):
        record = structref.new(record_type)
        record.records = records
        return record

    return impl


@njit
def new_state_record(records):
    """A :class:`StateRecord` holding ``records`` (a tuple of tuples of arrays), compiled."""
    return _new_record(records)


def state_record(records: tuple, make=None) -> StateRecord:
    """A :class:`StateRecord` of ``records`` (the engines' plain tuples), with ``records`` on its
    Python side too.  ``make``: the compiled constructor to call (an engine passes its compiled
    module's lazy entry, so that a first compilation runs as the others do, :mod:`onlinemkl._lazy`);
    :func:`new_state_record` by default."""
    record = (make or new_state_record)(records)
    record.records = records
    return record
