"""Qlik Replicate Kafka writer of the sample-feed simulator (``qlik_kafka``).

One topic per table, dumps ``<topic>-0-<offset>.<ext>`` split in two. SALES.CUSTOMERS: JSON
envelope (``.jsonl``) with its MD message. SALES.ORDER_LINES: Avro envelope (``.lpv``) with an
Avro MD message; some updates leave the unchanged NOTE column out by ``columnMask`` (absent, not
null). HR.EMPLOYEES: Confluent wire format (``.lpv``, schema ``schemas/1.avsc``), resolved
through the catalog seed's ``table_identifier``.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import fastavro

from python_udfs.qlik_kafka.decoder import ENVELOPE_SCHEMA, METADATA_SCHEMA
from simulator.database import SimChange, SimColumn, SimTable, Simulation


def _avro_field_type(col: SimColumn):
    return {
        "INT4": "int",
        "INT2": "int",
        "INT8": "long",
        "REAL8": "double",
        "BOOLEAN": "boolean",
    }.get(col.qlik_type, "string")


def data_schema(table: SimTable) -> dict:
    """Return the Avro ``DataRecord`` schema of a table, as Replicate's MD ``dataSchema`` declares it."""
    data_fields = [{"name": c.name, "type": ["null", _avro_field_type(c)]} for c in table.columns]
    return {
        "type": "record",
        "name": "DataRecord",
        "fields": [
            {"name": "data", "type": {"type": "record", "name": "Data", "fields": data_fields}},
            {"name": "beforeData", "type": ["null", "Data"]},
            {
                "name": "headers",
                "type": {
                    "type": "record",
                    "name": "Headers",
                    "fields": [
                        {
                            "name": "operation",
                            "type": {
                                "type": "enum",
                                "name": "operation",
                                "symbols": ["INSERT", "UPDATE", "DELETE", "REFRESH"],
                            },
                        },
                        {"name": "changeSequence", "type": "string"},
                        {"name": "timestamp", "type": "string"},
                        {"name": "streamPosition", "type": "string"},
                        {"name": "transactionId", "type": "string"},
                        {"name": "changeMask", "type": ["null", "bytes"]},
                        {"name": "columnMask", "type": ["null", "bytes"]},
                        {"name": "transactionEventCounter", "type": ["null", "long"]},
                        {"name": "transactionLastEvent", "type": ["null", "boolean"]},
                    ],
                },
            },
        ],
    }


def _md_message(table: SimTable) -> dict:
    return {
        "schemaId": f"SIM-{table.schema}-{table.name}-V{table.version}",
        "lineage": {
            "server": "sim",
            "task": "sim-to-kafka",
            "schema": table.schema,
            "table": table.name,
            "tableVersion": table.version,
            "timestamp": "2024-03-01T08:00:00.000",
        },
        "tableStructure": {
            "tableColumns": {
                c.name: {
                    "ordinal": i,
                    "type": c.qlik_type,
                    "length": c.length,
                    "precision": c.precision,
                    "scale": c.scale,
                    "primaryKeyPosition": c.primary_key_position,
                    "nullable": c.nullable,
                }
                for i, c in enumerate(table.columns, start=1)
            }
        },
        "dataSchema": json.dumps(data_schema(table)),
    }


def _json_value(value: str | None, col: SimColumn):
    if value is None:
        return None
    kind = col.qlik_type
    if kind in ("INT4", "INT8", "INT2"):
        return int(value)
    if kind == "REAL8":
        return float(value)
    if kind == "BOOLEAN":
        return value == "true"
    return value


def _kafka_message(change: SimChange) -> dict:
    table = change.table
    present = [c for c in table.columns if c.name not in change.absent]

    def image(row):
        return None if row is None else {c.name: _json_value(row[c.name], c) for c in present}

    def mask(names):
        bits = sum(1 << i for i, c in enumerate(table.columns) if c.name in names)
        return bits.to_bytes(max(1, (len(table.columns) + 7) // 8), "big")

    is_load = change.operation == "LOAD"
    data = change.after if change.after is not None else change.before
    return {
        "data": image(data),
        "beforeData": image(change.before) if change.operation == "UPDATE" else None,
        "headers": {
            "operation": "REFRESH" if is_load else change.operation,
            "changeSequence": change.change_seq,
            "timestamp": ""
            if is_load
            else change.committed_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3],
            "streamPosition": "" if is_load else f"LSN:{change.change_seq[-8:]}",
            "transactionId": change.transaction_id,
            "changeMask": None if is_load else mask(change.changed),
            "columnMask": None if is_load else mask([c.name for c in present]),
            "transactionEventCounter": None if is_load else change.counter,
            "transactionLastEvent": None if is_load else change.is_last,
        },
    }


def write_kafka(sim: Simulation, folder: Path, tables: tuple[SimTable, ...]) -> int:
    """Write the changes of ``tables`` under ``folder`` as Kafka message dumps, a topic a table.

    Versions of one table (:func:`simulator.database.with_added_column`) share its topic: each
    version's MD message, then its data messages, in the order of ``tables``.

    The open transaction's last event is left unpublished.
    Returns the number of dump files written. Raises ValueError for a simulation with TRUNCATE
    changes, which this writer does not express.
    """
    if any(c.operation == "TRUNCATE" for c in sim.changes):
        raise ValueError(
            "this simulator writer does not write TRUNCATE changes (simulate with truncate_every=0)"
        )
    written = 0
    # The open transaction's last event has not been published yet.
    unpublished = {id(c) for c in sim.open_transaction[-1:]}
    changes = [c for c in sim.changes if id(c) not in unpublished]
    (folder / "schemas").mkdir(parents=True, exist_ok=True)
    by_table: dict[int, list] = {}
    for change in changes:
        by_table.setdefault(id(change.table), []).append(change)
    topics: dict[str, tuple[str, list[bytes]]] = {}
    for table in tables:
        msgs = [_kafka_message(c) for c in by_table.get(id(table), [])]
        schema = fastavro.parse_schema(data_schema(table))
        md = _md_message(table)
        if table.kind == "CUSTOMERS":
            values = [
                json.dumps(
                    {
                        "magic": "atMSG",
                        "type": "MD",
                        "headers": None,
                        "messageSchemaId": None,
                        "messageSchema": None,
                        "message": md,
                    },
                    ensure_ascii=False,
                ).encode()
            ]
            for m in msgs:
                m["headers"]["changeMask"] = (
                    m["headers"]["changeMask"].hex().upper() if m["headers"]["changeMask"] else None
                )
                m["headers"]["columnMask"] = (
                    m["headers"]["columnMask"].hex().upper() if m["headers"]["columnMask"] else None
                )
                values.append(
                    json.dumps(
                        {
                            "magic": "atMSG",
                            "type": "DT",
                            "headers": None,
                            "messageSchemaId": md["schemaId"],
                            "messageSchema": None,
                            "message": m,
                        },
                        ensure_ascii=False,
                    ).encode()
                )
            topics.setdefault(table.topic, ("jsonl", []))[1].extend(values)
        elif table.kind == "ORDER_LINES":
            values = [_avro_envelope("MD", None, fastavro_bytes(METADATA_SCHEMA, md))]
            values += [
                _avro_envelope("DT", md["schemaId"], fastavro_bytes(schema, m)) for m in msgs
            ]
            topics.setdefault(table.topic, ("lpv", []))[1].extend(values)
        else:
            (folder / "schemas" / "1.avsc").write_text(
                json.dumps(data_schema(table)), encoding="utf-8"
            )
            values = [b"\x00" + struct.pack(">I", 1) + fastavro_bytes(schema, m) for m in msgs]
            topics.setdefault(table.topic, ("lpv", []))[1].extend(values)
    # a topic carries every version of its table, in the order of ``tables``
    for topic, (ext, values) in topics.items():
        written += _write_dumps(folder, topic, values, ext)
    return written


def fastavro_bytes(schema, record) -> bytes:
    """Encode one record with a parsed Avro schema (schemaless, as Kafka values are)."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def _avro_envelope(kind: str, schema_id: str | None, message: bytes) -> bytes:
    return fastavro_bytes(
        ENVELOPE_SCHEMA,
        {
            "magic": b"atMSG",
            "type": kind,
            "headers": None,
            "messageSchemaId": schema_id,
            "messageSchema": None,
            "message": message,
        },
    )


def _write_dumps(folder: Path, topic: str, values: list[bytes], ext: str) -> int:
    """Write values as two dump files ``<topic>-0-<first offset>.<ext>``."""
    half = max(1, len(values) // 2)
    count = 0
    for first, part in ((0, values[:half]), (half, values[half:])):
        if not part:
            continue
        path = folder / f"{topic}-0-{first:020d}.{ext}"
        if ext == "jsonl":
            path.write_bytes(b"".join(v + b"\n" for v in part))
        else:
            path.write_bytes(b"".join(struct.pack(">I", len(v)) + v for v in part))
        count += 1
    return count
