{#-
    The store behind the change_log mart, and what the apply chain reads: the changes of
    complete transactions only (DESIGN.md §5, §6.1). Each run appends, as partition
    applied_generation = its generation, the complete changes of its working set (new ingest
    batches, and the batches of transactions still open, ADR 0007) whose change_id is not in
    the log yet, so a run killed half way and started again appends exactly what is missing.
    Partitioned by is_key_change too (int_key_changes reads the key changes alone, ADR 0028).
    A change logged while its table had no key in the catalog is appended again, keyed, once,
    by the run after the catalog gives it one (ADR 0021; change_log leaves the first row out).
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='append_new_columns',
    partition_by=['applied_generation', 'is_key_change'],
) }}

{%- set columns = [
    'change_id', 'feed', 'source_schema', 'source_table', 'change_position', 'operation',
    'transaction_id', 'primary_key', 'before_primary_key', 'key_id', 'before_key_id',
    'transaction_sequence', 'before_image', 'after_image', 'changed_columns', 'table_columns',
    'is_in_catalog', 'committed_at', 'source_file', 'record_offset', 'record_index', 'ingest_batch_id',
] -%}
{#- the columns a change's key gives it (cdc_key_columns, cdc_key_id) -#}
{%- set key_columns = ['primary_key', 'before_primary_key', 'key_id', 'before_key_id', 'is_in_catalog'] %}
{#- columns a log of an earlier release lacks (on_schema_change): a row logged again lacks them -#}
{%- set later_columns = {'table_columns': 'array<string>'} %}

-- depends_on: {{ ref('int_catalog_tables') }}, {{ ref('int_changes_unioned') }}

with

changes as (
    select * from {{ ref('int_changes_transaction_flagged') }}
),

committed_changes as (
    select * from changes
    where is_transaction_complete
),

{% if is_incremental() %}
catalog_tables as (
    select * from {{ ref('int_catalog_tables') }}
),

committed_ids as (
    -- the run's change ids straight from the staging tables (no join to inflate Spark's size
    -- estimate): a small run's are broadcast, so the log is read unshuffled, by change_id
    select change_id from {{ ref('int_changes_unioned') }}
    where transaction_id is not null and is_transaction_complete
),

applied_changes as (
    select applied.change_id
    from {{ this }} as applied
    left semi join committed_ids on applied.change_id = committed_ids.change_id
),

new_changes as (
    select committed_changes.*
    from committed_changes
    left anti join applied_changes
        on committed_changes.change_id = applied_changes.change_id
),

logged_keyless as (
    -- rows logged without the key the catalog now gives them, the latest of each change (row
    -- groups without a keyless row are skipped by their statistics)
    select
        logged.*,
        row_number() over (partition by logged.change_id order by logged.applied_generation desc) as logged_rank
    from {{ this }} as logged
    inner join catalog_tables
        on
            logged.feed = catalog_tables.feed
            and logged.source_schema = catalog_tables.source_schema
            and logged.source_table = catalog_tables.source_table
    where
        (not logged.is_in_catalog or logged.primary_key is null)
        and {{ cdc_logged_without_key('logged', 'catalog_tables') }}
),

keyed_again as (
    -- keyless changes the log holds a keyed row of; the log is shuffled only when some row
    -- is keyless (the exists is a scalar subquery, evaluated before the scan)
    select applied.change_id
    from {{ this }} as applied
    left semi join logged_keyless on applied.change_id = logged_keyless.change_id
    left join catalog_tables
        on
            applied.feed = catalog_tables.feed
            and applied.source_schema = catalog_tables.source_schema
            and applied.source_table = catalog_tables.source_table
    where exists (select 1 from logged_keyless) and not {{ cdc_logged_without_key('applied', 'catalog_tables') }}
),

declared_late as (
    -- logged again once: unless the log holds a row of the change with its key
    select
        {%- for column in columns if column not in key_columns %}
            {%- if column in later_columns %}
            cast(null as {{ later_columns[column] }}) as {{ column }},
            {%- else %}
            logged_keyless.{{ column }},
            {%- endif %}
        {%- endfor %}
        {{ cdc_key_columns('logged_keyless', 'catalog_tables') }}
    from logged_keyless
    inner join catalog_tables
        on
            logged_keyless.feed = catalog_tables.feed
            and logged_keyless.source_schema = catalog_tables.source_schema
            and logged_keyless.source_table = catalog_tables.source_table
    left anti join keyed_again on logged_keyless.change_id = keyed_again.change_id
    where logged_keyless.logged_rank = 1
),

late_changes as (
    select
        *,
        {{ cdc_key_id('feed', 'source_schema', 'source_table', 'primary_key') }} as key_id,
        {{ cdc_key_id('feed', 'source_schema', 'source_table', 'before_primary_key') }} as before_key_id
    from declared_late
),
{% else %}
    new_changes as (
        select * from committed_changes
    ),
{% endif %}

logged as (
    select {{ columns | join(', ') }} from new_changes
    {%- if is_incremental() %}
        union all
        select {{ columns | join(', ') }} from late_changes
    {%- endif %}
),

final as (
    select
        *,
        '{{ cdc_generation() }}' as applied_generation,
        -- an UPDATE whose before image has another key
        coalesce(operation = 'UPDATE' and before_primary_key != primary_key, false) as is_key_change
    from logged
)

select * from final
