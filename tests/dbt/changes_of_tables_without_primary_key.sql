{{ config(severity='warn') }}
{#-
    Changes of catalog tables that declare no key column (primary_key_position 0 on every
    column of seeds/cdc_columns.csv): change_log holds them, but without a primary key they
    never reach current_state or history (DESIGN.md §6 applies changes per key). Set the
    primary_key_position of the table's key columns (a unique index's columns serve), then
    `cdc run`: the next run logs the changes logged before again, with their key, and applies
    them (ADR 0021). Tables missing from the
    catalog altogether are changes_of_tables_not_in_catalog's.

    The keyless tables are read from the catalog when the test compiles (a few rows): when
    there are none, the test reads no change and returns no row (a scan of change_log's table
    columns would cost 0.8 s at 1 M changes, 2.2 s at 5 M, for nothing). A warning blocks
    nothing: like changes_of_tables_not_in_catalog, the test also hangs off int_staged_batches
    (depends_on) and runs beside the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

{#- whether the catalog has a keyless table (true at parse time, and when the model is missing) -#}
{%- set catalog = load_relation(ref('int_catalog_tables')) if execute else none %}
{%- set has_keyless_tables = catalog is none or run_query(
    'select count(*) from ' ~ catalog ~ ' where size(key_column_names) = 0'
).rows[0][0] > 0 %}

{% if has_keyless_tables %}

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

{% else %}

    -- every catalog table declares a key: no change can be keyless
    select
        cast(null as string) as feed,
        cast(null as string) as source_schema,
        cast(null as string) as source_table,
        cast(0 as bigint) as change_count
    where false

{% endif %}
