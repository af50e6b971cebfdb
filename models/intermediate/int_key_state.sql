{#-
    One row per key ever seen (deleted keys included): its current version, the order of the
    last event applied to it, how many versions the history mart holds for it (version_count)
    and the generation whose change_log rows it includes (state_generation). Each run rewrites
    it from the previous state (keys not touched) and this run's current versions in
    int_history_versions, every row with this run's generation (state_generation). The next
    run reads it as the source cdc_state.int_key_state: its smallest state_generation is that
    run's watermark (cdc_state_watermark, ADR 0025).

    Partitioned by feed and table_key (a short hash of the table's names, macro cdc_table_key):
    the view current_state reads it, and a typed per-table view of current_state reads its own
    table's folder only, whatever the number of tables (ADR 0028). The names themselves are not
    partition values: names from the data may be longer than a folder name or a metastore
    partition value can be, or hold characters a path escapes.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    on_schema_change='fail',
    partition_by=['feed', 'table_key'],
) }}

{%- set generation = cdc_generation() -%}

with

computed_versions as (
    select * from {{ ref('int_history_versions') }}
    where history_generation = '{{ generation }}' and is_current
),

touched_state as (
    select
        source_schema,
        source_table,
        primary_key,
        key_id,
        version as current_version,
        last_event_order,
        rebuilt_generation,
        version_count,
        feed
    from computed_versions
),

{% if is_incremental() %}
untouched_state as (
    select
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key,
        previous_state.key_id,
        previous_state.current_version,
        previous_state.last_event_order,
        previous_state.rebuilt_generation,
        previous_state.version_count,
        previous_state.feed
    from {{ this }} as previous_state
    left anti join touched_state on previous_state.key_id = touched_state.key_id
),

key_state as (
    select * from touched_state
    union all
    select * from untouched_state
),
{% else %}
    key_state as (
        select * from touched_state
    ),
{% endif %}

final as (
    select
        source_schema,
        source_table,
        primary_key,
        key_id,
        current_version,
        last_event_order,
        rebuilt_generation,
        version_count,
        '{{ generation }}' as state_generation,
        feed,
        {{ cdc_table_key_sql() }} as table_key
    from key_state
)

select * from final
