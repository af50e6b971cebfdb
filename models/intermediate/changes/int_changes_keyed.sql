{#-
    Changes with the canonical text of their primary key, from the catalog's key columns, and
    the key of their before image when it carries every key column (an UPDATE whose
    before_primary_key differs from primary_key changed the key, DESIGN.md §6.3), and their
    key_id and before_key_id (cdc_key_id): computed here once, the one key column of every
    join downstream. A change logged before its table was declared gets its key in
    int_changes_logged, with the same macros.
-#}

with

changes as (
    select * from {{ ref('int_changes_unioned') }}
),

catalog_tables as (
    select * from {{ ref('int_catalog_tables') }}
),

keyed as (
    select
        changes.*,
        {{ cdc_key_columns('changes', 'catalog_tables') }}
    from changes
    left join catalog_tables
        on
            changes.feed = catalog_tables.feed
            and changes.source_schema = catalog_tables.source_schema
            and changes.source_table = catalog_tables.source_table
),

identified as (
    select
        *,
        {{ cdc_key_id('feed', 'source_schema', 'source_table', 'primary_key') }} as key_id,
        {{ cdc_key_id('feed', 'source_schema', 'source_table', 'before_primary_key') }} as before_key_id
    from keyed
)

select * from identified
