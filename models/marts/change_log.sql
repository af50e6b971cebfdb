{#-
    The change log of every feed, for readers: the changes of complete transactions, one row
    each (DESIGN.md §5, §6.1). A view of int_changes_logged, the incremental store that each
    run appends to and that the apply chain reads (issue 45: no int model reads a mart).
    A change logged before its table was declared (or given key columns) is shown once, as
    logged again with its key by the run after the declaration (ADR 0021): its first, keyless
    row is left out (cdc_logged_without_key).
-#}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

catalog_tables as (
    select * from {{ ref('int_catalog_tables') }}
),

shown as (
    select logged_changes.*
    from logged_changes
    left join catalog_tables
        on
            logged_changes.feed = catalog_tables.feed
            and logged_changes.source_schema = catalog_tables.source_schema
            and logged_changes.source_table = catalog_tables.source_table
    where not {{ cdc_logged_without_key('logged_changes', 'catalog_tables') }}
)

select * from shown
