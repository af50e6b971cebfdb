{#-
    The row versions this run computes, as partition history_generation = this run's
    generation (DESIGN.md §6). Only keys touched since the last applied generation are
    recomputed:

    - keys with new changes in change_log, and every known key of a table with a new reset;
    - fast path: when every new event of a key sorts after the last event already applied to
      it, the new events are applied to its current version (from int_key_state), which is
      written again with its closing position;
    - rebuild: when a new event sorts before that (late delivery of an earlier position, a late
      TRUNCATE or full load), every version of the key is computed again from all of its
      changes in change_log; the history mart then ignores the key's rows of older generations.

    A run killed before int_key_state is written leaves the watermark where it was, so the next
    run computes these keys again (and more) in its own generation; the history mart keeps the
    newest generation of each version.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['history_generation'],
) }}

{%- set generation = cdc_generation() -%}
{%- set watermark = cdc_state_watermark() -%}
{%- set previous_state = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_key_state')
    if watermark != '' else none -%}

with

change_log as (
    select * from {{ ref('change_log') }}
),

table_resets as (
    select * from {{ ref('int_table_resets') }}
),

previous_state as (
    {% if previous_state is not none %}
        select * from {{ previous_state }}
    {% else %}
        select
            cast(null as string) as source_schema,
            cast(null as string) as source_table,
            cast(null as string) as primary_key,
            cast(null as {{ cdc_version_type() }}) as current_version,
            cast(null as struct<change_position: string, source_file: string, record_index: bigint>) as last_event_order,
            cast(null as string) as rebuilt_generation,
            cast(null as string) as state_generation,
            cast(null as string) as feed
        where false
    {% endif %}
),

new_changes as (
    select * from change_log
    where applied_generation > '{{ watermark }}'
),

new_events as (
    {{ cdc_key_events('new_changes') }}
),

key_new_events as (
    select
        new_events.feed,
        new_events.source_schema,
        new_events.source_table,
        new_events.primary_key,
        collect_list(new_events.event) as events,
        min(event.event_order) as first_event_order
    from new_events
    group by new_events.feed, new_events.source_schema, new_events.source_table, new_events.primary_key
),

table_reset_events as (
    select
        feed,
        source_schema,
        source_table,
        collect_list(event) as resets,
        min(case when applied_generation > '{{ watermark }}' then reset_order end) as first_new_reset_order
    from table_resets
    group by feed, source_schema, source_table
),

touched_keys as (
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from key_new_events
    union
    select
        previous_state.feed,
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key
    from previous_state
    inner join table_reset_events
        on
            previous_state.feed = table_reset_events.feed
            and previous_state.source_schema = table_reset_events.source_schema
            and previous_state.source_table = table_reset_events.source_table
    where table_reset_events.first_new_reset_order is not null
),

classified as (
    select
        touched_keys.*,
        key_new_events.events as new_key_events,
        table_reset_events.resets,
        previous_state.current_version,
        previous_state.last_event_order,
        previous_state.rebuilt_generation as previous_rebuilt_generation,
        previous_state.primary_key is not null and (
            coalesce(key_new_events.first_event_order <= previous_state.last_event_order, false)
            or coalesce(table_reset_events.first_new_reset_order <= previous_state.last_event_order, false)
        ) as is_rebuilt
    from touched_keys
    left join key_new_events
        on
            touched_keys.feed = key_new_events.feed
            and touched_keys.source_schema = key_new_events.source_schema
            and touched_keys.source_table = key_new_events.source_table
            and touched_keys.primary_key = key_new_events.primary_key
    left join table_reset_events
        on
            touched_keys.feed = table_reset_events.feed
            and touched_keys.source_schema = table_reset_events.source_schema
            and touched_keys.source_table = table_reset_events.source_table
    left join previous_state
        on
            touched_keys.feed = previous_state.feed
            and touched_keys.source_schema = previous_state.source_schema
            and touched_keys.source_table = previous_state.source_table
            and touched_keys.primary_key = previous_state.primary_key
),

rebuilt_keys as (
    select
        feed,
        source_schema,
        source_table,
        primary_key
    from classified
    where is_rebuilt
),

all_events as (
    {{ cdc_key_events('change_log') }}
),

rebuilt_key_events as (
    select
        all_events.feed,
        all_events.source_schema,
        all_events.source_table,
        all_events.primary_key,
        collect_list(all_events.event) as events
    from all_events
    left semi join rebuilt_keys
        on
            all_events.feed = rebuilt_keys.feed
            and all_events.source_schema = rebuilt_keys.source_schema
            and all_events.source_table = rebuilt_keys.source_table
            and all_events.primary_key = rebuilt_keys.primary_key
    group by all_events.feed, all_events.source_schema, all_events.source_table, all_events.primary_key
),

key_events as (
    select
        classified.feed,
        classified.source_schema,
        classified.source_table,
        classified.primary_key,
        classified.is_rebuilt,
        case
            when classified.is_rebuilt
                then concat(
                    coalesce(rebuilt_key_events.events, array()),
                    {{ cdc_applicable_resets('classified.resets', 'rebuilt_key_events.events') }}
                )
            else concat(
                coalesce(classified.new_key_events, array()),
                filter(
                    {{ cdc_applicable_resets('classified.resets', 'classified.new_key_events') }},
                    r -> classified.last_event_order is null or r.event_order > classified.last_event_order
                )
            )
        end as events,
        case
            when not classified.is_rebuilt and not classified.current_version.is_deleted
                then classified.current_version.row
        end as initial_row,
        case
            when not classified.is_rebuilt and classified.current_version is not null
                then array(classified.current_version)
            else cast(array() as array<{{ cdc_version_type() }}>)
        end as initial_versions,
        case
            when classified.is_rebuilt or classified.previous_rebuilt_generation is null then '{{ generation }}'
            else classified.previous_rebuilt_generation
        end as rebuilt_generation,
        case when not classified.is_rebuilt then classified.last_event_order end as previous_last_event_order
    from classified
    left join rebuilt_key_events
        on
            classified.feed = rebuilt_key_events.feed
            and classified.source_schema = rebuilt_key_events.source_schema
            and classified.source_table = rebuilt_key_events.source_table
            and classified.primary_key = rebuilt_key_events.primary_key
),

folded as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        is_rebuilt,
        rebuilt_generation,
        {{ cdc_fold_versions('events', 'initial_row', 'initial_versions') }} as versions,
        greatest(
            previous_last_event_order,
            array_max(transform(events, e -> e.event_order))
        ) as last_event_order
    from key_events
),

exploded as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        is_rebuilt,
        rebuilt_generation,
        last_event_order,
        versions,
        posexplode(versions) as (version_index, version)
    from folded
),

final as (
    select
        to_json(array(
            exploded.feed, exploded.source_schema, exploded.source_table, exploded.primary_key,
            version.opened_order.change_position, version.opened_order.source_file,
            lpad(cast(version.opened_order.record_index as string), 12, '0')
        )) as version_id,
        exploded.source_schema,
        exploded.source_table,
        exploded.primary_key,
        exploded.version,
        version.opened_order.change_position as valid_from_position,
        version.opened_at as valid_from,
        try_element_at(exploded.versions, exploded.version_index + 2).opened_order.change_position as valid_to_position,
        try_element_at(exploded.versions, exploded.version_index + 2).opened_at as valid_to,
        try_element_at(exploded.versions, exploded.version_index + 2).operation as closed_by_operation,
        exploded.version_index = size(exploded.versions) - 1 as is_current,
        exploded.is_rebuilt,
        exploded.rebuilt_generation,
        exploded.last_event_order,
        exploded.feed,
        '{{ generation }}' as history_generation
    from exploded
)

select * from final
