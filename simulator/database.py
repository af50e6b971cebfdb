"""The simulated source database: tables, a seeded random workload and its final state.

:func:`simulate` runs a seeded random workload (full load, then transactions of inserts,
updates and deletes) against three tables with composite keys, NULLs, Unicode text, exact
decimals, floats, booleans, dates and timestamps, and records the final state of every table:
the ground truth that the end-to-end test compares with ``current_state``. The last transaction
is left open (its end has not been written yet), so it must stay pending. ``JP_TABLES`` are the
tables of the Japanese products (NCHAR, packed and zoned decimals, Shift_JIS text).
:func:`catalog_rows` and :func:`seed_catalog` give the catalog seeds of the simulated tables.

The writers of each feed format (:mod:`simulator.feeds`) import this module; it imports none of
them but the GoldenGate type codes of the catalog.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from simulator.goldengate_trail import gg_type_code

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
    #: The table's version at the source: 1, plus one per DDL (:func:`with_added_column`).
    version: int = 1

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


def with_added_column(table: SimTable, column: SimColumn) -> SimTable:
    """Return ``table`` after ``ALTER TABLE ... ADD column`` at the source: its next version.

    Changes made after the DDL reference the returned table; the writers describe it as each
    product does (a Kafka MD message of the higher ``tableVersion``, ``.dfm`` files listing the
    column, a new GoldenGate TDR record, HiRDB statements naming the column).
    """
    return dataclasses.replace(table, columns=(*table.columns, column), version=table.version + 1)


def with_dropped_column(table: SimTable, column_name: str) -> SimTable:
    """Return ``table`` after ``ALTER TABLE ... DROP COLUMN column_name``: its next version.

    Changes made after the DDL reference the returned table, so their images lack the column;
    the writers describe the version as for :func:`with_added_column` (Kafka MD, ``.dfm``,
    GoldenGate TDR). Raises ValueError for a key column or a name the table does not have.
    """
    column = next((c for c in table.columns if c.name == column_name), None)
    if column is None or column.primary_key_position:
        raise ValueError(f"{table.topic} has no non-key column {column_name!r}")
    kept = tuple(c for c in table.columns if c.name != column_name)
    return dataclasses.replace(table, columns=kept, version=table.version + 1)


def with_altered_column(table: SimTable, column_name: str, column: SimColumn) -> SimTable:
    """Return ``table`` after ``ALTER TABLE ... RENAME COLUMN`` or ``... ALTER COLUMN TYPE``.

    The next version has ``column`` in the place of ``column_name`` (another name: a rename;
    another type: a type change). Raises ValueError for a key column or a name the table does
    not have.
    """
    if not any(c.name == column_name and not c.primary_key_position for c in table.columns):
        raise ValueError(f"{table.topic} has no non-key column {column_name!r}")
    columns = tuple(column if c.name == column_name else c for c in table.columns)
    return dataclasses.replace(table, columns=columns, version=table.version + 1)


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
    #: Every table version the workload wrote to, in order (``simulate(added_column=...)``
    #: adds the new version last); empty when the caller's tables are all there is.
    tables: tuple[SimTable, ...] = ()


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
    added_column: tuple[str, SimColumn, int] | None = None,
) -> Simulation:
    """Run a seeded workload; return its changes and the final state of every table.

    ``load_rows`` rows per table are fully loaded first, then ``transactions`` transactions of
    1–4 changes each (inserts 40 %, updates 40 %, deletes 20 %) follow, then one more
    transaction that is left open. With ``truncate_every`` > 0, every such-numbered transaction
    is instead a TRUNCATE of one table (GoldenGate, HiRDB and Linkexpress carry it). ``tables``
    is the source database (:func:`tables_for` a format). ``added_column`` ``(table name,
    column, transaction number)`` adds a column to that table before that transaction
    (:func:`with_added_column`): later changes write the table's new version, an UPDATE's
    before image reads the column as NULL, and rows not changed since have no value for it.
    The writers must be given the new version too (:attr:`Simulation.tables`). Change
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
    versions = list(tables)
    for txn in range(transactions + 1):
        clock += dt.timedelta(seconds=rng.randint(1, 90), microseconds=rng.randint(0, 99) * 10000)
        txn_id = f"{txn + 1:032X}"
        if added_column is not None and txn == added_column[2]:
            tables = tuple(
                with_added_column(t, added_column[1]) if t.name == added_column[0] else t
                for t in tables
            )
            versions += [t for t in tables if t.name == added_column[0]]
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
                # the row as it reads now: a column added since it was written reads NULL
                before = {c.name: None for c in table.columns} | rows[key]
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
                before = {c.name: None for c in table.columns} | rows.pop(key)
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
    return Simulation(changes, final or state, open_txn, tuple(versions))


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


def transaction_groups(sim: Simulation) -> list[tuple[str, list]]:
    """Group the simulation's changes into ``(transaction id, changes)`` in commit order."""
    groups: list[tuple[str, list]] = []
    for change in sim.changes:
        if groups and groups[-1][0] == change.transaction_id:
            groups[-1][1].append(change)
        else:
            groups.append((change.transaction_id, [change]))
    return groups
