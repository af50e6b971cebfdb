{{ config(severity='warn') }}
{#-
    Columns added at the source after their table was declared (source DDL, issue 46): the
    columns of a seed table's latest metadata (a Kafka MD message of a higher tableVersion, a
    later .dfm, a new GoldenGate TDR, or a HiRDB statement naming a column the catalog lacks)
    that the seeds do not have. Their values are kept in change_log, current_state and
    history whatever this test says; `cdc scaffold` appends them to seeds/cdc_columns.csv, so
    the typed views show them. One row per column.

    A warning blocks nothing: like changes_of_tables_not_in_catalog, the test also hangs off
    int_staged_batches (depends_on) and runs beside the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

with

catalog_tables as (
    select * from {{ ref('int_catalog_tables') }}
    where declared_by = 'seed' and metadata_column_names is not null
),

added_columns as (
    select
        feed,
        source_schema,
        source_table,
        explode(array_except(metadata_column_names, column_names)) as column_name
    from catalog_tables
)

select * from added_columns
