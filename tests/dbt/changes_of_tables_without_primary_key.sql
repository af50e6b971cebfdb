{{ config(severity='warn') }}
{#-
    Changes of catalog tables that declare no key column (primary_key_position 0 on every
    column of seeds/cdc_columns.csv): change_log holds them, but without a primary key they
    never reach current_state or history (DESIGN.md §6 applies changes per key). Set the
    primary_key_position of the table's key columns (a unique index's columns serve), then
    rebuild with `cdc run -- --full-refresh`: change_log keeps the key each change was logged
    with, so only a full refresh keys the changes logged before. Tables missing from the
    catalog altogether are changes_of_tables_not_in_catalog's.

    The keyless tables come from the catalog (a few rows); when there are none, Spark still
    scans change_log's table columns (0.8 s at 1 M changes). A warning blocks nothing: like
    changes_of_tables_not_in_catalog, the test also hangs off int_staged_batches (depends_on)
    and runs beside the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

with

change_log as (
    select * from {{ ref('change_log') }}
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
    change_log.feed,
    change_log.source_schema,
    change_log.source_table,
    count(*) as change_count
from change_log
left semi join keyless_tables
    on
        change_log.feed = keyless_tables.feed
        and change_log.source_schema = keyless_tables.source_schema
        and change_log.source_table = keyless_tables.source_table
where change_log.operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
group by change_log.feed, change_log.source_schema, change_log.source_table
