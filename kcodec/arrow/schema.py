"""The Arrow schema of decoded records: Spark's Kafka source schema, plus the batch fields asked for."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Sequence, Tuple

from kcodec._native.columnar import BATCH_FIELDS, kafka_schema_capsule
from kcodec.arrow.columns import pyarrow_module

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["BATCH_FIELDS", "kafka_schema"]

_SCHEMAS: Dict[Tuple[bool, Tuple[str, ...], bool], "pyarrow.Schema"] = {}


def kafka_schema(headers: bool = True, batch_fields: Sequence[str] = (), views: bool = False) -> "pyarrow.Schema":
    """Spark's Kafka source schema (plus the requested batch fields), as :func:`~kcodec.arrow.decode_columns`
    produces it.

    With ``views`` key and value are ``binary_view`` (see :func:`~kcodec.arrow.to_arrow`).
    """
    key = (bool(headers), tuple(batch_fields), bool(views))
    if key not in _SCHEMAS:
        _SCHEMAS[key] = pyarrow_module().Schema._import_from_c_capsule(kafka_schema_capsule(*key))
    return _SCHEMAS[key]
