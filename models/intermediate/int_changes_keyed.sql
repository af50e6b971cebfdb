{#- Changes with the canonical text of their primary key, from the catalog's key columns. -#}

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
        {{ cdc_primary_key('catalog_tables.key_column_names', 'changes.before_image', 'changes.after_image') }}
            as primary_key,
        catalog_tables.source_table is not null as is_in_catalog
    from changes
    left join catalog_tables
        on
            changes.feed = catalog_tables.feed
            and changes.source_schema = catalog_tables.source_schema
            and changes.source_table = catalog_tables.source_table
)

select * from keyed
