"""Qlik Replicate change-table writer of the sample-feed simulator (``qlik_change_tables``).

Per table a full-load folder ``<S>.<T>/LOAD00000001.*`` and change files
``<S>.<T>__ct/YYYYMMDD-HHMMSSmmm.*`` with the 7 default headers, ``B`` rows before their ``U``,
masks in ``lsb_last_hex`` order. SALES.CUSTOMERS is CSV + ``.dfm`` with a header row,
SALES.ORDER_LINES is CSV with a header row and no ``.dfm`` (types from the catalog seed),
HR.EMPLOYEES is Parquet + ``.dfm``.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

from python_udfs.qlik_change_tables.decoder import DEFAULT_HEADER_FIELDS
from simulator.database import SimChange, SimColumn, SimTable, Simulation

HEADERS = DEFAULT_HEADER_FIELDS


def _dfm(table: SimTable, with_headers: bool, fmt: str, name: str, records: int) -> str:
    cols = []
    if with_headers:
        for h in HEADERS:
            cols.append(
                {
                    "name": f"header__{h}",
                    "type": "DATETIME" if h == "timestamp" else "STRING",
                    "length": 35,
                    "precision": 0,
                    "scale": 0,
                    "primaryKeyPos": 0,
                }
            )
    for c in table.columns:
        cols.append(
            {
                "name": c.name,
                "type": c.qlik_type,
                "length": c.length,
                "precision": c.precision,
                "scale": c.scale,
                "primaryKeyPos": c.primary_key_position,
            }
        )
    for i, c in enumerate(cols, start=1):
        c["ordinal"] = i
    return json.dumps(
        {
            "dfmVersion": "1.1",
            "taskInfo": {
                "name": "sim",
                "sourceEndpoint": "simdb",
                "sourceEndpointType": "sim",
                "sourceEndpointUser": "",
                "replicationServer": "sim",
                "operation": "",
            },
            "fileInfo": {
                "name": name,
                "extension": fmt,
                "location": "",
                "startWriteTimestamp": "",
                "endWriteTimestamp": "",
                "content": "data",
                "recordCount": records,
                "errorCount": 0,
            },
            "formatInfo": {
                "format": "parquet" if fmt == "parquet" else "delimited",
                "options": {
                    "fieldDelimiter": ",",
                    "recordDelimiter": "\n",
                    "nullValue": "",
                    "quoteChar": '"',
                    "escapeChar": "",
                },
            },
            "dataInfo": {
                "sourceSchema": table.schema,
                "sourceTable": table.name,
                "targetSchema": table.schema,
                "targetTable": table.name,
                "tableVersion": table.version,
                "columns": cols,
            },
        },
        indent=2,
    )


def _mask(table: SimTable, names: list[str], header_count: int) -> str:
    bits = 0
    for i, col in enumerate(table.columns):
        if col.name in names:
            bits |= 1 << (header_count + i)
    return format(bits, "X") if bits else ""


def _csv_field(value: str | None, col: SimColumn | None) -> str:
    if value is None:
        return ""
    if col is not None and col.qlik_type == "DATETIME":
        # Qlik writes 7 fraction digits; the decoder truncates to microseconds.
        date, _, frac = value.partition(".")
        return f"{date}.{(frac or '0').ljust(7, '0')}"
    if col is None or col.qlik_type in ("STRING", "WSTRING"):
        return '"' + value.replace('"', '""') + '"'
    return value


def _ct_records(
    table: SimTable, changes: list[SimChange]
) -> list[tuple[list[str | None], SimChange]]:
    """Change-table records (header values + data values) of one table, B rows before U."""
    out = []
    for change in changes:
        ts = change.committed_at.strftime("%Y-%m-%d %H:%M:%S.%f")
        common = [
            change.change_seq,
            None,
            None,
            f"LSN:{change.change_seq[-8:]}",
            None,
            change.transaction_id,
            ts,
        ]
        if change.operation == "UPDATE":
            before = list(common)
            before[1], before[2], before[4] = "B", "", "BEFOREIMAGE"
            out.append((before + [change.before[c.name] for c in table.columns], change))
        oper = {"INSERT": "I", "UPDATE": "U", "DELETE": "D"}[change.operation]
        head = list(common)
        head[1], head[2], head[4] = (
            oper,
            _mask(table, change.changed, len(HEADERS)),
            change.operation,
        )
        image = change.after if change.after is not None else change.before
        out.append((head + [image[c.name] for c in table.columns], change))
    return out


def write_change_tables(sim: Simulation, folder: Path, tables: tuple[SimTable, ...]) -> int:
    """Write the committed changes of ``tables`` as change-table files under ``folder``.

    Returns the number of data files written (``.dfm`` files not counted). Raises ValueError
    for a simulation with TRUNCATE changes, which this writer does not express.
    """
    if any(c.operation == "TRUNCATE" for c in sim.changes):
        raise ValueError(
            "this simulator writer does not write TRUNCATE changes (simulate with truncate_every=0)"
        )
    written = 0
    open_ids = {id(c) for c in sim.open_transaction}
    committed = [c for c in sim.changes if id(c) not in open_ids]
    by_table: dict[int, list] = {}
    for change in committed:
        by_table.setdefault(id(change.table), []).append(change)
    for table in tables:
        changes = by_table.get(id(table), [])
        loads = [c for c in changes if c.operation == "LOAD"]
        cdc = [c for c in changes if c.operation != "LOAD"]
        style = {"CUSTOMERS": "csv_dfm", "ORDER_LINES": "csv_header", "EMPLOYEES": "parquet"}[
            table.kind
        ]
        load_dir, ct_dir = folder / table.topic, folder / f"{table.topic}__ct"
        load_dir.mkdir(parents=True, exist_ok=True)
        ct_dir.mkdir(parents=True, exist_ok=True)
        load_records = [([c.after[col.name] for col in table.columns], c) for c in loads]
        if loads or table.version == 1:  # a later version's empty load would replace it
            written += _write_ct_file(
                table, load_dir, "LOAD00000001", load_records, style, with_headers=False
            )
        half = len(cdc) // 2
        for part in (cdc[:half], cdc[half:]):
            if not part:
                continue
            name = (
                part[0].committed_at.strftime("%Y%m%d-%H%M%S")
                + f"{part[0].committed_at.microsecond // 1000:03d}"
            )
            written += _write_ct_file(
                table, ct_dir, name, _ct_records(table, part), style, with_headers=True
            )
    return written


def _write_ct_file(table, folder: Path, name: str, records, style: str, with_headers: bool) -> int:
    header_cols = [f"header__{h}" for h in HEADERS] if with_headers else []
    names = header_cols + [c.name for c in table.columns]
    specs: list[SimColumn | None] = [None] * len(header_cols) + list(table.columns)
    if style == "parquet":
        _write_ct_parquet(table, folder / f"{name}.parquet", records, header_cols)
        (folder / f"{name}.dfm").write_text(
            _dfm(table, with_headers, "parquet", f"{name}.parquet", len(records)), encoding="utf-8"
        )
        return 1
    lines = [",".join(names)]
    for values, _change in records:
        fields = []
        for i, (value, spec) in enumerate(zip(values, specs, strict=True)):
            if spec is None and i < len(header_cols):
                if header_cols[i] == "header__timestamp":
                    fields.append(value or "")
                elif header_cols[i] == "header__change_mask":
                    fields.append(value or "")
                else:
                    fields.append('"' + value + '"' if value is not None else "")
            else:
                fields.append(_csv_field(value, spec))
        lines.append(",".join(fields))
    (folder / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if style == "csv_dfm":
        (folder / f"{name}.dfm").write_text(
            _dfm(table, with_headers, "csv", f"{name}.csv", len(records)), encoding="utf-8"
        )
    return 1


def _arrow_type(col: SimColumn):
    import pyarrow as pa

    return {
        "INT4": pa.int32(),
        "INT8": pa.int64(),
        "INT2": pa.int16(),
        "REAL8": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "DATE": pa.date32(),
        "DATETIME": pa.timestamp("us"),
    }.get(
        col.qlik_type,
        pa.decimal128(col.precision, col.scale) if col.qlik_type == "NUMERIC" else pa.string(),
    )


def _arrow_value(value: str | None, col: SimColumn):
    if value is None:
        return None
    kind = col.qlik_type
    if kind in ("INT4", "INT8", "INT2"):
        return int(value)
    if kind == "NUMERIC":
        return Decimal(value)
    if kind == "REAL8":
        return float(value)
    if kind == "BOOLEAN":
        return value == "true"
    if kind == "DATE":
        return dt.date.fromisoformat(value)
    if kind == "DATETIME":
        return dt.datetime.fromisoformat(value)
    return value


def _write_ct_parquet(table: SimTable, path: Path, records, header_cols: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for i, name in enumerate(header_cols):
        values = [r[0][i] for r in records]
        if name == "header__timestamp":
            fields.append(pa.field(name, pa.timestamp("us")))
            arrays.append(
                pa.array([dt.datetime.fromisoformat(v) for v in values], pa.timestamp("us"))
            )
        elif name == "header__change_mask":
            fields.append(pa.field(name, pa.binary()))
            arrays.append(
                pa.array(
                    [bytes.fromhex(v.rjust(len(v) + len(v) % 2, "0")) if v else b"" for v in values]
                )
            )
        else:
            fields.append(pa.field(name, pa.string()))
            arrays.append(pa.array(values, pa.string()))
    for j, col in enumerate(table.columns):
        values = [_arrow_value(r[0][len(header_cols) + j], col) for r in records]
        fields.append(pa.field(col.name, _arrow_type(col)))
        arrays.append(pa.array(values, _arrow_type(col)))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path, row_group_size=16)
