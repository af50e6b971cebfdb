{{ config(severity='warn') }}
{#-
    Changes of catalog tables that declare no key column (primary_key_position 0 on every
    column of seeds/cdc_columns.csv): change_log holds them, but without a primary key they
    never reach current_state or history (DESIGN.md §6 applies changes per key). Set the
    primary_key_position of the table's key columns (a unique index's columns serve), then
    `cdc run`: the next run logs the changes logged before again, with their key, and applies
    them (ADR 0021). Tables missing from the
    catalog altogether are changes_of_tables_not_in_catalog's.

    A change of a table without key columns is logged without a primary key
    (cdc_primary_key), so only rows whose primary_key is null are read: Spark pushes that
    filter into the scan of change_log's store, and parquet skips every row group without such
    a row by its statistics (a null count of 0). Nothing is read when the test compiles. A
    warning blocks nothing: like changes_of_tables_not_in_catalog, the test also hangs off
    int_staged_batches (depends_on) and runs beside the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

with

keyless_changes as (
    select
        feed,
        source_schema,
        source_table
    from {{ ref('change_log') }}
    where primary_key is null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
),

keyless_tables as (
    select
        feed,
        source_schema,
        source_table
    from {{ ref('int_catalog_tables') }}
    where size(key_column_names) = 0
)

select
    keyless_changes.feed,
    keyless_changes.source_schema,
    keyless_changes.source_table,
    count(*) as change_count
from keyless_changes
left semi join keyless_tables
    on
        keyless_changes.feed = keyless_tables.feed
        and keyless_changes.source_schema = keyless_tables.source_schema
        and keyless_changes.source_table = keyless_tables.source_table
group by keyless_changes.feed, keyless_changes.source_schema, keyless_changes.source_table
