{#-
    The keys this run applies (DESIGN.md §6, ADR 0008), one row each, rewritten by every run:
    keys with new changes in change_log since the last applied generation (cdc_state_watermark
    of the previous state, the source cdc_state.int_key_state), and every known key of a table
    with a new reset. A key is rebuilt (all its changes again) when a new event sorts before
    the last event applied to it (late delivery of an earlier position, a late TRUNCATE or full
    load), and so is every key a chain of key changes links to it, however long (ADR 0026);
    otherwise its new events continue its current version (fast path). A table of its own:
    int_apply_events reads it several times.
-#}

{{ config(materialized='table') }}

with recursive

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

table_resets as (
    select * from {{ ref('int_table_resets') }}
),

previous_state as (
    -- the key state the previous run wrote (empty on a full refresh: cdc_prepare_key_state)
    select * from {{ source('cdc_state', 'int_key_state') }}
),

new_changes as (
    select * from logged_changes
    where applied_generation > {{ cdc_state_watermark() }}
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
    from table_resets
    where applied_generation > {{ cdc_state_watermark() }}
    group by feed, source_schema, source_table
),

previous_touched as (
    -- the previous state of the keys with new events and of every key of a table with a new
    -- reset: the small sides are broadcast, so the state (every key ever seen) is read once
    -- and never shuffled
    select /*+ broadcast(key_first_new_events, table_first_new_resets) */
        previous_state.feed,
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key,
        previous_state.key_id,
        previous_state.current_version,
        previous_state.last_event_order,
        previous_state.rebuilt_generation,
        previous_state.version_count,
        -- a new event or reset sorts before the last event applied: the key is rebuilt
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
    where key_first_new_events.key_id is not null or table_first_new_resets.feed is not null
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
        previous_touched.rebuilt_generation as previous_rebuilt_generation,
        previous_touched.version_count as previous_version_count,
        coalesce(previous_touched.is_rebuilt, false) as is_rebuilt
    from key_first_new_events
    full outer join previous_touched
        on key_first_new_events.key_id = previous_touched.key_id
),

key_change_edges as (
    -- every key change on record, both ways (key → other key): a rebuilt key takes the keys its
    -- row came from and went to along, since their rows depend on each other (ADR 0008)
    select
        edge.key_id,
        edge.other_key_id
    from (
        select
            explode(array(
                named_struct('key_id', before_key_id, 'other_key_id', key_id),
                named_struct('key_id', key_id, 'other_key_id', before_key_id)
            )) as edge
        from {{ ref('int_key_changes') }}
    ) as key_changes
),

key_change_paths (origin_key_id, key_id, path) as (
    -- every key a chain of key changes reaches from a key, one key change further each step,
    -- never back to a key of the path: over the key changes alone (no event of this run), so
    -- it costs one small job when there is none. A chain of more than 100 key changes
    -- (spark.sql.cteRecursionLevelLimit) stops the run with Spark's error
    select
        key_id as origin_key_id,
        other_key_id as key_id,
        array(key_id, other_key_id) as path
    from key_change_edges
    union all
    select
        key_change_paths.origin_key_id,
        key_change_edges.other_key_id as key_id,
        concat(key_change_paths.path, array(key_change_edges.other_key_id)) as path
    from key_change_paths
    inner join key_change_edges on key_change_paths.key_id = key_change_edges.key_id
    where not array_contains(key_change_paths.path, key_change_edges.other_key_id)
),

reached_keys as (
    -- the keys a chain of key changes links to a rebuilt key. LIMIT ALL lifts Spark's cap on the
    -- rows a recursive CTE returns (a million). A reached key is in the state or has new events:
    -- its key change is in change_log, applied before or new now
    select /*+ broadcast(paths) */ distinct paths.key_id
    from previous_touched
    inner join (select * from key_change_paths limit all) as paths  -- noqa: AM09
        on previous_touched.key_id = paths.origin_key_id
    where previous_touched.is_rebuilt
),

reached_untouched as (
    -- the reached keys with no new event and no new reset, from the state: rebuilt, so their
    -- previous figures are not read (int_apply_events, int_history_versions)
    select /*+ broadcast(reached_keys, key_first_new_events, table_first_new_resets) */
        previous_state.feed,
        previous_state.source_schema,
        previous_state.source_table,
        previous_state.primary_key,
        previous_state.key_id,
        cast(null as {{ cdc_version_type() }}) as current_version,
        cast(null as struct<change_position: string, source_file: string, record_index: bigint>)
            as previous_last_event_order,
        cast(null as string) as previous_rebuilt_generation,
        cast(null as bigint) as previous_version_count,
        true as is_rebuilt
    from previous_state
    left semi join reached_keys on previous_state.key_id = reached_keys.key_id
    left anti join key_first_new_events on previous_state.key_id = key_first_new_events.key_id
    left anti join table_first_new_resets
        on
            previous_state.feed = table_first_new_resets.feed
            and previous_state.source_schema = table_first_new_resets.source_schema
            and previous_state.source_table = table_first_new_resets.source_table
),

classified as (
    -- the touched keys (rebuilt too when a key change links them to a rebuilt key), and the
    -- reached keys that are not touched
    select /*+ broadcast(reached_keys) */
        first_classified.* except (is_rebuilt),
        first_classified.is_rebuilt or reached_keys.key_id is not null as is_rebuilt
    from first_classified
    left join reached_keys on first_classified.key_id = reached_keys.key_id
    union all
    select * from reached_untouched
)

select * from classified
