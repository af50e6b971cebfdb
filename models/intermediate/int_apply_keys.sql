{#-
    The keys this run applies (DESIGN.md §6, ADR 0008), one row each, rewritten by every run:
    keys with new changes in change_log since the last applied generation (cdc_state_watermark
    of the previous state, the source cdc_state.int_key_state), and every known key of a table
    with a new reset. A key is rebuilt (all its changes again) when a new event sorts before
    the last event applied to it (late delivery of an earlier position, a late TRUNCATE or full
    load), and so are the keys its row came from or went to by a key change (three key changes
    away); otherwise its new events continue its current version (fast path). A table of its
    own: int_apply_events reads it several times.
-#}

{{ config(materialized='table') }}

{#- whether any key change is on record (a partition of int_key_changes, built before this
    model; from the metastore): without one, a rebuilt key takes no other key along and the
    closure below is left out (ADR 0020; planned at parse time and in a dbt unit test) -#}
{%- set key_changes_relation = cdc_model_relation('int_key_changes') if execute else none -%}
{%- set plans_closure = key_changes_relation is none or cdc_partition_values(key_changes_relation) | length > 0 -%}

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
        key_changes.edge.key_id,
        named_struct(
            'key_id', key_changes.edge.other_key_id,
            'feed', key_changes.feed,
            'source_schema', key_changes.source_schema,
            'source_table', key_changes.source_table,
            'primary_key', key_changes.edge.other_key
        ) as other
    from (
        select
            feed,
            source_schema,
            source_table,
            explode(array(
                named_struct('key_id', before_key_id, 'other_key_id', key_id, 'other_key', primary_key),
                named_struct('key_id', key_id, 'other_key_id', before_key_id, 'other_key', before_primary_key)
            )) as edge
        from {{ ref('int_key_changes') }}
    ) as key_changes
),

{% if plans_closure %}

    rebuilt_reach (key_id, feed, source_schema, source_table, primary_key, steps) as (
        -- the rebuilt keys, and the keys up to three key changes away from one (a recursive CTE,
        -- one key change further each step; none without a rebuilt key or a key change)
        select
            key_id,
            feed,
            source_schema,
            source_table,
            primary_key,
            0 as steps
        -- the state's side of first_classified: the new events' first orders are broadcast
        -- there, so this reads the state again but shuffles nothing
        from previous_touched
        where is_rebuilt
        union all
        select
            key_change_edges.other.key_id,
            key_change_edges.other.feed,
            key_change_edges.other.source_schema,
            key_change_edges.other.source_table,
            key_change_edges.other.primary_key,
            rebuilt_reach.steps + 1 as steps
        from rebuilt_reach
        inner join key_change_edges on rebuilt_reach.key_id = key_change_edges.key_id
        where rebuilt_reach.steps < 3
    ),

    rebuilt_keys as (
        -- LIMIT ALL lifts Spark's cap on the rows a recursive CTE returns (a million)
        select distinct
            reached.key_id,
            reached.feed,
            reached.source_schema,
            reached.source_table,
            reached.primary_key
        from (select * from rebuilt_reach limit all) as reached  -- noqa: AM09
    ),

    classified as (
        -- the touched keys, and the keys a key change links to a rebuilt key: rebuilt, so their
        -- previous figures are not read (int_apply_events, int_history_versions)
        select
            coalesce(first_classified.feed, rebuilt_keys.feed) as feed,
            coalesce(first_classified.source_schema, rebuilt_keys.source_schema) as source_schema,
            coalesce(first_classified.source_table, rebuilt_keys.source_table) as source_table,
            coalesce(first_classified.primary_key, rebuilt_keys.primary_key) as primary_key,
            coalesce(first_classified.key_id, rebuilt_keys.key_id) as key_id,
            first_classified.current_version,
            first_classified.previous_last_event_order,
            first_classified.previous_rebuilt_generation,
            first_classified.previous_version_count,
            rebuilt_keys.key_id is not null as is_rebuilt
        from first_classified
        full outer join rebuilt_keys on first_classified.key_id = rebuilt_keys.key_id
    )

{% else %}

classified as (
    -- no key change on record: the classified keys are the touched keys
    select * from first_classified
)
{% endif %}

select * from classified
