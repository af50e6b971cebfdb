{#-
    The keys this run applies (DESIGN.md §6, ADR 0030, ADR 0038): keys with changes since the
    watermark (the last run that merged history, source cdc_state.history), and the known keys
    of a table with a new reset. A key is rebuilt (all its changes again) when a new event sorts
    before the last event applied to it (a late position, TRUNCATE or full load), and so is
    every key a chain of key changes links to it (int_linked_keys, ADR 0026); else its new
    events continue its current version.
-#}

{{ config(materialized='table') }}

with

new_changes as (
    select * from {{ ref('int_changes_logged') }}
    where applied_generation > {{ cdc_state_watermark() }}
),

new_resets as (
    select * from {{ ref('int_table_resets') }}
    where applied_generation > {{ cdc_state_watermark() }}
),

previous_state as (
    -- each key's current version as the previous runs left history (empty on a first run or a
    -- full refresh: cdc_prepare_history), with the order of the last event applied to it
    select
        *,
        named_struct(
            'opened_order', opened_order, 'opened_at', valid_from, 'operation', opened_by_operation,
            'row', row, 'is_deleted', is_deleted
        ) as current_version
    from {{ source('cdc_state', 'history') }}
    where is_current
),

linked_keys as (
    select * from {{ ref('int_linked_keys') }}
),

new_events as (
    {{ cdc_key_events('new_changes') }}
),

key_first_new_events as (
    select
        new_events.feed,
        new_events.source_schema,
        new_events.source_table,
        new_events.primary_key,
        new_events.key_id,
        min(event.event_order) as first_event_order
    from new_events
    group by new_events.key_id, new_events.feed, new_events.source_schema, new_events.source_table, new_events.primary_key
),

table_first_new_resets as (
    select
        feed,
        source_schema,
        source_table,
        min(reset_order) as first_new_reset_order
    from new_resets
    group by feed, source_schema, source_table
),

previous_flagged as (
    -- every key of the previous state: touched (new events, or a new reset of its table), and
    -- rebuilt (a new event or reset sorts before the last event applied to it). The run's
    -- sides are broadcast, so the state (every key ever seen) is not shuffled; not on a first
    -- build, whose batch is every change and whose state is empty (cdc_broadcast)
    select {{ cdc_broadcast(['key_first_new_events', 'table_first_new_resets']) }}
        previous_state.feed,
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key,
        previous_state.key_id,
        previous_state.current_version,
        previous_state.last_event_order,
        key_first_new_events.key_id is not null or table_first_new_resets.feed is not null as is_touched,
        coalesce(key_first_new_events.first_event_order <= previous_state.last_event_order, false)
        or coalesce(table_first_new_resets.first_new_reset_order <= previous_state.last_event_order, false)
            as is_rebuilt
    from previous_state
    left join key_first_new_events
        on previous_state.key_id = key_first_new_events.key_id
    left join table_first_new_resets
        on
            previous_state.feed = table_first_new_resets.feed
            and previous_state.source_schema = table_first_new_resets.source_schema
            and previous_state.source_table = table_first_new_resets.source_table
),

previous_touched as (
    select * from previous_flagged
    where is_touched
),

first_classified as (
    -- the touched keys: keys with new events (known before or not) and the known keys of a
    -- table with a new reset
    select
        coalesce(previous_touched.feed, key_first_new_events.feed) as feed,
        coalesce(previous_touched.source_schema, key_first_new_events.source_schema) as source_schema,
        coalesce(previous_touched.source_table, key_first_new_events.source_table) as source_table,
        coalesce(previous_touched.primary_key, key_first_new_events.primary_key) as primary_key,
        coalesce(previous_touched.key_id, key_first_new_events.key_id) as key_id,
        previous_touched.current_version,
        previous_touched.last_event_order as previous_last_event_order,
        coalesce(previous_touched.is_rebuilt, false) as is_rebuilt
    from key_first_new_events
    full outer join previous_touched
        on key_first_new_events.key_id = previous_touched.key_id
),

reached_keys as (
    -- the keys a chain of key changes links to a rebuilt key: each is in the state or has new
    -- events (its key change is in change_log, applied before or new now)
    select {{ cdc_broadcast(['linked_keys']) }} distinct linked_keys.linked_key_id as key_id
    from previous_touched
    inner join linked_keys
        on previous_touched.key_id = linked_keys.key_id
    where previous_touched.is_rebuilt
),

reached_untouched as (
    -- the linked keys with no new event and no new reset, from the state (a rebuilt key's
    -- previous figures are not read: int_apply_events, int_key_versions)
    select /*+ broadcast(reached_keys) */
        previous_flagged.* except (last_event_order, is_touched, is_rebuilt),
        previous_flagged.last_event_order as previous_last_event_order,
        true as is_rebuilt
    from previous_flagged
    left semi join reached_keys on previous_flagged.key_id = reached_keys.key_id
    where not previous_flagged.is_touched
),

classified as (
    -- the touched keys (rebuilt too when linked to a rebuilt key), and the untouched linked ones
    select /*+ broadcast(reached_keys) */
        first_classified.* except (is_rebuilt),
        first_classified.is_rebuilt or reached_keys.key_id is not null as is_rebuilt
    from first_classified
    left join reached_keys on first_classified.key_id = reached_keys.key_id
    union all
    select * from reached_untouched
)

select * from classified
