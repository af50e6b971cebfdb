"""Sample-feed simulator: a small source database, a random workload, and what each product writes.

:func:`simulate` runs a seeded random workload (full load, then transactions of inserts,
updates and deletes) against three tables with composite keys, NULLs, Unicode text, exact
decimals, floats, booleans, dates and timestamps, and records the final state of every table:
the ground truth that the end-to-end test compares with ``current_state``. The last transaction
is left open (its end has not been written yet), so it must stay pending.

:func:`write_feed` writes the workload as one product would have written it:

* ``qlik_change_tables``: per table a full-load folder ``<S>.<T>/LOAD00000001.*`` and change
  files ``<S>.<T>__ct/YYYYMMDD-HHMMSSmmm.*`` with the 7 default headers, ``B`` rows before their
  ``U``, masks in ``lsb_last_hex`` order. SALES.CUSTOMERS is CSV + ``.dfm`` with a header row,
  SALES.ORDER_LINES is CSV with a header row and no ``.dfm`` (types from the catalog seed),
  HR.EMPLOYEES is Parquet + ``.dfm``.
* ``qlik_kafka``: one topic per table, dumps ``<topic>-0-<offset>.<ext>`` split in two.
  SALES.CUSTOMERS: JSON envelope (``.jsonl``) with its MD message. SALES.ORDER_LINES: Avro
  envelope (``.lpv``) with an Avro MD message; some updates leave the unchanged NOTE column out
  by ``columnMask`` (absent, not null). HR.EMPLOYEES: Confluent wire format (``.lpv``, schema
  ``schemas/1.avsc``), resolved through the catalog seed's ``table_identifier``.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
import random
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro

from python_udfs.qlik_change_tables import DEFAULT_HEADER_FIELDS
from python_udfs.qlik_kafka import ENVELOPE_SCHEMA, METADATA_SCHEMA
from python_udfs.simulator_goldengate import gg_type_code, write_trails
from python_udfs.simulator_japanese import write_extracts, write_sqltxt

HEADERS = DEFAULT_HEADER_FIELDS
NAMES = [
    "Ann",
    "Björn",
    "Chloé",
    "Dmitri",
    "Eun-ji",
    "Fatima",
    "Gao Yi",
    "Hiroshi 浩",
    "Zoë 🔥",
    'Quinn "Q"',
]
CITIES = ["Seattle", "München", "São Paulo", "東京", "Reykjavík", "Cape Town", "Zürich, CH"]
PRODUCTS = ["bolt", "nut, hex", "washer", "rivet 3/16", "gear ⚙", "spring"]


@dataclass(frozen=True, slots=True)
class SimColumn:
    """A column of a simulated table.

    ``qlik_type`` is the Qlik Replicate type name, which also drives value generation
    (``DATETIME_S``: whole seconds; ``TIME``); ``hirdb_type`` / ``lx_type`` are the HiRDB and
    Linkexpress (Symfoware) type names of the Japanese tables; ``length`` is bytes for
    character columns and characters for NCHAR; ``pool`` lists the text values to draw from.
    """

    name: str
    qlik_type: str
    spark_type: str
    primary_key_position: int = 0
    nullable: bool = False
    length: int = 0
    precision: int = 0
    scale: int = 0
    hirdb_type: str = ""
    lx_type: str = ""
    pool: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SimTable:
    """A simulated source table."""

    schema: str
    name: str
    columns: tuple[SimColumn, ...]
    #: The table this one copies (:func:`copies_of`); empty for an original.
    template: str = ""

    @property
    def kind(self) -> str:
        """The original table's name: what a writer's per-table choices (file style) follow."""
        return self.template or self.name

    @property
    def key_columns(self) -> list[SimColumn]:
        """Key columns in key order."""
        return sorted(
            (c for c in self.columns if c.primary_key_position),
            key=lambda c: c.primary_key_position,
        )

    @property
    def topic(self) -> str:
        """The Kafka topic of the table (also its ``table_identifier`` in the catalog)."""
        return f"{self.schema}.{self.name}"


TABLES = (
    SimTable(
        "SALES",
        "CUSTOMERS",
        (
            SimColumn("CUSTOMER_ID", "INT4", "int", 1, length=10),
            SimColumn("NAME", "STRING", "string", length=100),
            SimColumn("CITY", "STRING", "string", nullable=True, length=60),
            SimColumn(
                "CREDIT_LIMIT", "NUMERIC", "decimal(12,2)", nullable=True, precision=12, scale=2
            ),
            SimColumn("CREATED_AT", "DATETIME", "timestamp"),
        ),
    ),
    SimTable(
        "SALES",
        "ORDER_LINES",
        (
            SimColumn("ORDER_ID", "INT8", "bigint", 1, length=19),
            SimColumn("LINE_NO", "INT2", "smallint", 2, length=5),
            SimColumn("PRODUCT", "STRING", "string", length=40),
            SimColumn("QUANTITY", "INT4", "int", length=10),
            SimColumn("UNIT_PRICE", "NUMERIC", "decimal(10,3)", precision=10, scale=3),
            SimColumn("NOTE", "STRING", "string", nullable=True, length=200),
            SimColumn("SHIPPED_DATE", "DATE", "date", nullable=True),
        ),
    ),
    SimTable(
        "HR",
        "EMPLOYEES",
        (
            SimColumn("EMP_NO", "INT4", "int", 1, length=10),
            SimColumn("FROM_DATE", "DATE", "date", 2),
            SimColumn("FULL_NAME", "WSTRING", "string", length=80),
            SimColumn("SALARY", "NUMERIC", "decimal(18,2)", precision=18, scale=2),
            SimColumn("RATING", "REAL8", "double", nullable=True),
            SimColumn("IS_ACTIVE", "BOOLEAN", "boolean"),
        ),
    ),
)


JP_NAMES = ("山田　太郎", "佐藤　花子", "鈴木　一郎", "高橋　美紀", "渡辺　翔", "伊藤　光")
JP_FULL_NAMES = tuple(
    n.ljust(10, "\u3000") for n in ("山田太郎", "佐藤花子", "鈴木一郎", "高橋美紀")
)
JP_CITIES = ("東京", "大阪", "名古屋市中区", "ｻｯﾎﾟﾛ", "O'Hare", "横浜", "福岡")
JP_PRODUCTS = ("ボルト", "ナット", "ワッシャー", "座金 M8", "ばね")
JP_NOTES = ("", "至急", "ギフト包装", "it's fragile", "再配達")
JP_RANKS = ("GOLD    ", "SILVER  ", "BRONZE  ")

#: The tables of the Japanese feeds (HiRDB update SQL, Linkexpress extracts): the same three
#: tables with the types those products have (NCHAR, packed and zoned decimals, no BOOLEAN).
JP_TABLES = (
    SimTable(
        "SALES",
        "CUSTOMERS",
        (
            SimColumn("CUSTOMER_ID", "INT4", "int", 1, hirdb_type="INTEGER", lx_type="INTEGER"),
            SimColumn(
                "NAME",
                "STRING",
                "string",
                length=20,
                hirdb_type="NVARCHAR",
                lx_type="NCHAR VARYING",
                pool=JP_NAMES,
            ),
            SimColumn(
                "RANK",
                "STRING",
                "string",
                length=8,
                hirdb_type="CHAR",
                lx_type="CHAR",
                pool=JP_RANKS,
            ),
            SimColumn(
                "CITY",
                "STRING",
                "string",
                nullable=True,
                length=40,
                hirdb_type="VARCHAR",
                lx_type="VARCHAR",
                pool=JP_CITIES,
            ),
            SimColumn(
                "CREDIT_LIMIT",
                "NUMERIC",
                "decimal(12,2)",
                nullable=True,
                precision=12,
                scale=2,
                hirdb_type="DECIMAL",
                lx_type="DECIMAL",
            ),
            SimColumn(
                "CREATED_AT", "DATETIME_S", "timestamp", hirdb_type="TIMESTAMP", lx_type="TIMESTAMP"
            ),
        ),
    ),
    SimTable(
        "SALES",
        "ORDER_LINES",
        (
            SimColumn("ORDER_ID", "INT8", "bigint", 1, hirdb_type="BIGINT", lx_type="BIGINT"),
            SimColumn("LINE_NO", "INT2", "smallint", 2, hirdb_type="SMALLINT", lx_type="SMALLINT"),
            SimColumn(
                "PRODUCT",
                "STRING",
                "string",
                length=30,
                hirdb_type="MVARCHAR",
                lx_type="VARCHAR",
                pool=JP_PRODUCTS,
            ),
            SimColumn(
                "QUANTITY",
                "NUMERIC",
                "int",
                precision=5,
                scale=0,
                hirdb_type="DECIMAL",
                lx_type="NUMERIC",
            ),
            SimColumn(
                "UNIT_PRICE",
                "NUMERIC",
                "decimal(10,3)",
                precision=10,
                scale=3,
                hirdb_type="DECIMAL",
                lx_type="DECIMAL",
            ),
            SimColumn(
                "NOTE",
                "STRING",
                "string",
                nullable=True,
                length=300,
                hirdb_type="VARCHAR",
                lx_type="VARCHAR",
                pool=JP_NOTES,
            ),
            SimColumn(
                "SHIPPED_DATE", "DATE", "date", nullable=True, hirdb_type="DATE", lx_type="DATE"
            ),
        ),
    ),
    SimTable(
        "HR",
        "EMPLOYEES",
        (
            SimColumn("EMP_NO", "INT4", "int", 1, hirdb_type="INTEGER", lx_type="INTEGER"),
            SimColumn("FROM_DATE", "DATE", "date", 2, hirdb_type="DATE", lx_type="DATE"),
            SimColumn(
                "FULL_NAME",
                "STRING",
                "string",
                length=10,
                hirdb_type="NCHAR",
                lx_type="NCHAR",
                pool=JP_FULL_NAMES,
            ),
            SimColumn(
                "SALARY",
                "NUMERIC",
                "decimal(18,2)",
                precision=18,
                scale=2,
                hirdb_type="DECIMAL",
                lx_type="DECIMAL",
            ),
            SimColumn(
                "RATING",
                "REAL8",
                "double",
                nullable=True,
                hirdb_type="FLOAT",
                lx_type="DOUBLE PRECISION",
            ),
            SimColumn("SHIFT_START", "TIME", "string", hirdb_type="TIME", lx_type="TIME"),
            SimColumn("GRADE", "INT2", "smallint", hirdb_type="SMALLINT", lx_type="SMALLINT"),
        ),
    ),
)
#: Feed formats whose simulated source database has the Japanese tables.
JP_FORMATS = ("hirdb_update_sql", "linkexpress_extract")


def copies_of(tables: tuple[SimTable, ...], copies: int) -> tuple[SimTable, ...]:
    """Return ``copies`` copies of each table, named ``<NAME>_001`` and on.

    The tables themselves when ``copies`` is 1. A catalog of hundreds of tables for the
    benchmarks, with the columns and the file styles of the originals (``template``).
    """
    if copies == 1:
        return tables
    return tuple(
        SimTable(t.schema, f"{t.name}_{n:03d}", t.columns, template=t.name)
        for n in range(1, copies + 1)
        for t in tables
    )


def tables_for(fmt: str, count: int | None = None) -> tuple[SimTable, ...]:
    """Return the simulated tables a feed format replicates (JP_TABLES or TABLES).

    With ``count``, that many tables: the first ``count`` of enough copies of them
    (:func:`copies_of`); 3 is the originals.
    """
    tables = JP_TABLES if fmt in JP_FORMATS else TABLES
    if count is None:
        return tables
    return copies_of(tables, -(-count // len(tables)))[:count]


@dataclass(slots=True)
class SimChange:
    """One captured change: canonical-text images, change sequence and transaction facts."""

    table: SimTable
    operation: str  # LOAD, INSERT, UPDATE, DELETE
    before: dict[str, str | None] | None
    after: dict[str, str | None] | None
    changed: list[str]
    change_seq: str
    transaction_id: str
    committed_at: dt.datetime
    counter: int = 1
    is_last: bool = True
    absent: tuple[str, ...] = ()


@dataclass(slots=True)
class Simulation:
    """A workload and the final state (table → primary-key text → row) it leaves."""

    changes: list[SimChange]
    final_state: dict[tuple[str, str], dict[str, dict[str, str | None]]] = field(
        default_factory=dict
    )
    open_transaction: list[SimChange] = field(default_factory=list)


def primary_key_text(table: SimTable, row: Mapping[str, str | None]) -> str:
    """Canonical primary-key text, as the dbt macro ``cdc_primary_key`` renders it."""
    return json.dumps(
        [row[c.name] for c in table.key_columns], ensure_ascii=False, separators=(",", ":")
    )


def _value(rng: random.Random, col: SimColumn, key: int = 0) -> str | None:
    if col.nullable and rng.random() < 0.2:
        return None
    kind = col.qlik_type
    if kind in ("INT4", "INT8", "INT2"):
        return str(rng.randint(1, 500))
    if col.pool:
        return rng.choice(col.pool)
    if kind == "TIME":
        return f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}:00"
    if kind == "DATETIME_S":
        moment = dt.datetime(2023, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**7))
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    if kind == "NUMERIC":
        bound = 10**col.precision - 1 if col.precision else 10**7
        unscaled = rng.randint(-min(10**6, bound), min(10**7, bound))
        return format(Decimal(unscaled).scaleb(-col.scale), "f")
    if kind == "REAL8":
        return repr(rng.randint(0, 1000) / 8)
    if kind == "BOOLEAN":
        return rng.choice(["true", "false"])
    if kind == "DATE":
        return (dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 1500))).isoformat()
    if kind == "DATETIME":
        moment = dt.datetime(2023, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**7))
        micros = rng.choice([0, 0, rng.randint(1, 999999)])
        return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{micros:06d}" if micros else "")
    pool = {"NAME": NAMES, "FULL_NAME": NAMES, "CITY": CITIES, "PRODUCT": PRODUCTS}.get(col.name)
    if pool:
        return rng.choice(pool)
    return rng.choice(
        ["", "rush", "gift wrap", "note with\nnewline", "comma, inside", 'quote " inside']
    )


def _new_row(rng: random.Random, table: SimTable, key: tuple) -> dict[str, str | None]:
    row = {c.name: _value(rng, c) for c in table.columns}
    for col, value in zip(table.key_columns, key, strict=True):
        row[col.name] = value
    return row


def _new_key(rng: random.Random, table: SimTable, used: set[str]) -> tuple:
    while True:
        key = []
        for col in table.key_columns:
            if col.qlik_type == "DATE":
                key.append(
                    (dt.date(2015, 1, 1) + dt.timedelta(days=rng.randint(0, 3000))).isoformat()
                )
            else:
                key.append(str(rng.randint(1, 10**6 if col.primary_key_position == 1 else 9)))
        text = json.dumps(key, separators=(",", ":"))
        if text not in used:
            used.add(text)
            return tuple(key)


class _KeyPool:
    """Live keys of a table with O(1) add, remove and seeded random choice."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.index: dict[str, int] = {}

    def add(self, key: str) -> None:
        self.index[key] = len(self.keys)
        self.keys.append(key)

    def remove(self, key: str) -> None:
        i = self.index.pop(key)
        last = self.keys.pop()
        if last != key:
            self.keys[i], self.index[last] = last, i

    def choice(self, rng: random.Random) -> str:
        return self.keys[rng.randrange(len(self.keys))]


def simulate(
    seed: int = 7,
    load_rows: int = 12,
    transactions: int = 40,
    truncate_every: int = 0,
    tables: tuple[SimTable, ...] = TABLES,
) -> Simulation:
    """Run a seeded workload; return its changes and the final state of every table.

    ``load_rows`` rows per table are fully loaded first, then ``transactions`` transactions of
    1–4 changes each (inserts 40 %, updates 40 %, deletes 20 %) follow, then one more
    transaction that is left open. With ``truncate_every`` > 0, every such-numbered transaction
    is instead a TRUNCATE of one table (GoldenGate, HiRDB and Linkexpress carry it). ``tables``
    is the source database (:func:`tables_for` a format). Change
    sequences are 35 digits (16-digit commit time to
    hundredths of a second + 19-digit change number), as Qlik Replicate writes them.
    """
    rng = random.Random(seed)
    state: dict[tuple[str, str], dict[str, dict[str, str | None]]] = {
        (t.schema, t.name): {} for t in tables
    }
    used: dict[tuple[str, str], set[str]] = {(t.schema, t.name): set() for t in tables}
    changes: list[SimChange] = []
    live = {t.name: _KeyPool() for t in tables}
    clock = dt.datetime(2024, 3, 1, 8, 0, 0)
    number = 0
    for table in tables:
        for _ in range(load_rows):
            row = _new_row(rng, table, _new_key(rng, table, used[(table.schema, table.name)]))
            state[(table.schema, table.name)][primary_key_text(table, row)] = row
            live[table.name].add(primary_key_text(table, row))
            changes.append(SimChange(table, "LOAD", None, dict(row), [], "", "", clock))
    final = None
    open_txn: list[SimChange] = []
    for txn in range(transactions + 1):
        clock += dt.timedelta(seconds=rng.randint(1, 90), microseconds=rng.randint(0, 99) * 10000)
        txn_id = f"{txn + 1:032X}"
        size = rng.randint(1, 4)
        txn_changes = []
        if txn == transactions:
            final = copy.deepcopy(state)
        if truncate_every and txn < transactions and (txn + 1) % truncate_every == 0:
            table = rng.choice(tables)
            number += 1
            seq = (
                clock.strftime("%Y%m%d%H%M%S")
                + f"{clock.microsecond // 10000:02d}"
                + f"{number:019d}"
            )
            state[(table.schema, table.name)].clear()
            live[table.name] = _KeyPool()
            changes.append(SimChange(table, "TRUNCATE", None, None, [], seq, txn_id, clock))
            continue
        for _ in range(size):
            table = rng.choice(tables)
            rows = state[(table.schema, table.name)]
            roll = rng.random()
            number += 1
            seq = (
                clock.strftime("%Y%m%d%H%M%S")
                + f"{clock.microsecond // 10000:02d}"
                + f"{number:019d}"
            )
            if roll < 0.4 or len(rows) < 3:
                row = _new_row(rng, table, _new_key(rng, table, used[(table.schema, table.name)]))
                rows[primary_key_text(table, row)] = row
                live[table.name].add(primary_key_text(table, row))
                change = SimChange(
                    table,
                    "INSERT",
                    None,
                    dict(row),
                    [c.name for c in table.columns],
                    seq,
                    txn_id,
                    clock,
                )
            elif roll < 0.8:
                key = live[table.name].choice(rng)
                before = rows[key]
                after = dict(before)
                candidates = [c for c in table.columns if not c.primary_key_position]
                for col in rng.sample(candidates, rng.randint(1, len(candidates))):
                    after[col.name] = _value(rng, col)
                changed = [c.name for c in table.columns if after[c.name] != before[c.name]]
                if not changed:  # Qlik writes no change-table row for a no-op update
                    number -= 1
                    continue
                absent = ()
                if table.kind == "ORDER_LINES" and "NOTE" not in changed and rng.random() < 0.5:
                    absent = ("NOTE",)
                rows[key] = after
                change = SimChange(
                    table,
                    "UPDATE",
                    dict(before),
                    dict(after),
                    changed,
                    seq,
                    txn_id,
                    clock,
                    absent=absent,
                )
            else:
                key = live[table.name].choice(rng)
                live[table.name].remove(key)
                before = rows.pop(key)
                change = SimChange(
                    table,
                    "DELETE",
                    dict(before),
                    None,
                    [c.name for c in table.key_columns],
                    seq,
                    txn_id,
                    clock,
                )
            txn_changes.append(change)
        for i, change in enumerate(txn_changes, start=1):
            change.counter, change.is_last = i, i == len(txn_changes)
        if txn == transactions:
            open_txn = txn_changes
        changes.extend(txn_changes)
    return Simulation(changes, final or state, open_txn)


def catalog_rows(
    feeds: Mapping[str, str], tables_per_feed: int | None = None
) -> tuple[list[dict], list[dict]]:
    """Return ``(cdc_columns rows, cdc_tables rows)`` of the simulated tables.

    ``feeds`` maps feed name to format; Kafka tables get their topic as ``table_identifier``,
    Linkexpress tables their extraction id (1, 2, 3 in table order). ``tables_per_feed``: the
    ``count`` of :func:`tables_for` (default: the three tables of the format).
    """
    columns, tables = [], []
    for feed, fmt in feeds.items():
        for number, table in enumerate(tables_for(fmt, tables_per_feed), start=1):
            for ordinal, col in enumerate(table.columns, start=1):
                columns.append(
                    {
                        "feed": feed,
                        "source_schema": table.schema,
                        "source_table": table.name,
                        "column_name": col.name,
                        "ordinal": ordinal,
                        "source_type": str(gg_type_code(col))
                        if fmt == "goldengate_trail"
                        else col.hirdb_type
                        if fmt == "hirdb_update_sql"
                        else col.lx_type
                        if fmt == "linkexpress_extract"
                        else col.qlik_type,
                        "length": col.length,
                        "precision": col.precision,
                        "scale": col.scale,
                        "primary_key_position": col.primary_key_position,
                        "nullable": "true" if col.nullable else "false",
                        "spark_type": col.spark_type,
                    }
                )
            tables.append(
                {
                    "feed": feed,
                    "source_schema": table.schema,
                    "source_table": table.name,
                    "table_identifier": table.topic
                    if fmt == "qlik_kafka"
                    else str(number)
                    if fmt == "linkexpress_extract"
                    else "",
                }
            )
    return columns, tables


def seed_catalog(fmt: str, feed: str = "feed", tables_per_feed: int | None = None):
    """Return the catalog a decoder receives for the simulated tables of ``fmt``.

    That is ``{(schema, table): [MetadataColumn, …]}`` built from :func:`catalog_rows`, as
    staging builds it from the seeds, and ``{table_identifier as int: (schema, table)}`` for
    numeric identifiers (Linkexpress extraction ids). ``tables_per_feed`` as in
    :func:`tables_for`.
    """
    from python_udfs.records import MetadataColumn

    columns, tables = catalog_rows({feed: fmt}, tables_per_feed)
    catalog: dict[tuple[str, str], list] = {}
    for r in columns:
        catalog.setdefault((r["source_schema"], r["source_table"]), []).append(
            MetadataColumn(
                r["source_schema"],
                r["source_table"],
                None,
                r["column_name"],
                r["ordinal"],
                r["source_type"],
                r["length"] or None,
                r["precision"] or None,
                r["scale"],
                r["primary_key_position"],
                r["nullable"] == "true",
                "catalog_seed",
            )
        )
    ids = {
        int(t["table_identifier"]): (t["source_schema"], t["source_table"])
        for t in tables
        if str(t["table_identifier"]).isdigit()
    }
    return catalog, ids


def write_feed(
    sim: Simulation,
    fmt: str,
    folder: Path,
    options: Mapping[str, Any] | None = None,
    tables: tuple[SimTable, ...] | None = None,
) -> int:
    """Write the simulation in feed format ``fmt`` under ``folder``; return the file count.

    ``tables`` are the tables the simulation ran over (default :func:`tables_for` the format).
    """
    folder.mkdir(parents=True, exist_ok=True)
    tables = tables or tables_for(fmt)
    if fmt == "qlik_change_tables":
        return _write_change_tables(sim, folder, tables)
    if fmt == "qlik_kafka":
        return _write_kafka(sim, folder, tables)
    if fmt == "goldengate_trail":
        return write_trails(sim, tables, folder, options)
    if fmt == "hirdb_update_sql":
        return write_sqltxt(sim, folder, options)
    if fmt == "linkexpress_extract":
        return write_extracts(sim, folder, options, tables)
    raise ValueError(f"the simulator does not write {fmt!r} yet")


# -- Qlik change tables ------------------------------------------------------------------------


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
                "tableVersion": 1,
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


def _write_change_tables(sim: Simulation, folder: Path, tables: tuple[SimTable, ...]) -> int:
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


# -- Qlik Kafka --------------------------------------------------------------------------------


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
        "schemaId": f"SIM-{table.schema}-{table.name}-V1",
        "lineage": {
            "server": "sim",
            "task": "sim-to-kafka",
            "schema": table.schema,
            "table": table.name,
            "tableVersion": 1,
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


def _write_kafka(sim: Simulation, folder: Path, tables: tuple[SimTable, ...]) -> int:
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
            written += _write_dumps(folder, table.topic, values, "jsonl")
        elif table.kind == "ORDER_LINES":
            values = [_avro_envelope("MD", None, fastavro_bytes(METADATA_SCHEMA, md))]
            values += [
                _avro_envelope("DT", md["schemaId"], fastavro_bytes(schema, m)) for m in msgs
            ]
            written += _write_dumps(folder, table.topic, values, "lpv")
        else:
            (folder / "schemas" / "1.avsc").write_text(
                json.dumps(data_schema(table)), encoding="utf-8"
            )
            values = [b"\x00" + struct.pack(">I", 1) + fastavro_bytes(schema, m) for m in msgs]
            written += _write_dumps(folder, table.topic, values, "lpv")
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
