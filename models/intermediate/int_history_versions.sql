{#-
    The row versions this run computes, as partition history_generation = this run's
    generation (DESIGN.md §6, ADR 0008), from the events of the keys it applies
    (int_apply_events: the fast path continues a key from its current version, a rebuild
    recomputes all its versions; the history mart then ignores the key's rows of older
    generations).

    Set-based: the row after each event holds, for every column its lineage carries, the last
    value an event of the lineage up to it carried: the last image of its segment when every
    image of the lineage carries the same columns (one window over the lineage's events), else
    a window per column over the lineage's events with one row per column (compressed images).
    A lineage is a segment of a key (int_apply_events), extended by key changes: the SET of a
    key change continues the old key's segment before the REMOVE of the same change, so the row
    moves to the new key with every column it had. A version opens where the row changes. No
    lambda runs per event.

    A run killed before int_key_state is written leaves the watermark where it was, so the next
    run computes these keys again (and more) in its own generation; the history mart keeps the
    newest generation of each version.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    on_schema_change='fail',
    partition_by=['history_generation'],
) }}

{%- set generation = cdc_generation() %}
{#- whether a key change is among this run's events (the is_key_change partition of
    int_apply_events, from the metastore): the key-change lineages are planned only then (true
    at parse time and in a dbt unit test) -#}
{%- set apply_events_relation = cdc_model_relation('int_apply_events') if execute else none %}
{%- set plans_key_changes = apply_events_relation is none
    or 'true' in cdc_partition_values(apply_events_relation) %}

with recursive

apply_events as (
    select * from {{ ref('int_apply_events') }}
),

{% if plans_key_changes %}

    key_change_links as (
        -- the SET of a key change continues the old key's segment before the REMOVE of the same
        -- change (reads the is_key_change partition only)
        select
            moved.key_id as child_key_id,
            moved.segment as child_segment,
            removed.key_id as root_key_id,
            removed.segment - 1 as root_segment
        from apply_events as moved
        inner join apply_events as removed
            on
                moved.source_key_id = removed.key_id
                and moved.event_order = removed.event_order
        where
            moved.is_key_change
            and removed.is_key_change
            and moved.source_key_id is not null
            and removed.kind = 'REMOVE'
            and removed.segment > 1
    ),

    lineage_chains (child_key_id, child_segment, root_key_id, root_segment, depth) as (
        -- each key change's chain followed back one key change at a time, as far as it goes (a
        -- recursive CTE: a segment's link points to an earlier segment, so the chain ends)
        select
            child_key_id,
            child_segment,
            root_key_id,
            root_segment,
            1 as depth
        from key_change_links
        union all
        select
            lineage_chains.child_key_id,
            lineage_chains.child_segment,
            key_change_links.root_key_id,
            key_change_links.root_segment,
            lineage_chains.depth + 1 as depth
        from lineage_chains
        inner join key_change_links
            on
                lineage_chains.root_key_id = key_change_links.child_key_id
                and lineage_chains.root_segment = key_change_links.child_segment
    ),

    lineage_roots as (
        -- the first segment of each chain: where it went furthest back. LIMIT ALL lifts Spark's
        -- cap on the rows a recursive CTE returns (spark.sql.cteRecursionRowLimit, a million:
        -- a run rebuilding many keys with key changes can pass it); a chain of more than 100 key
        -- changes (spark.sql.cteRecursionLevelLimit) stops the run with Spark's error
        select
            chains.child_key_id,
            chains.child_segment,
            max_by(named_struct('key_id', chains.root_key_id, 'segment', chains.root_segment), chains.depth) as root
        from (select * from lineage_chains limit all) as chains  -- noqa: AM09
        group by chains.child_key_id, chains.child_segment
    ),

    lineaged as (
        -- a row's lineage: the first segment of its chain of key changes (its own when none)
        select
            apply_events.*,
            coalesce(lineage_roots.root.key_id, apply_events.key_id) as lineage_key_id,
            coalesce(lineage_roots.root.segment, apply_events.segment) as lineage_segment
        from apply_events
        left join lineage_roots
            on
                apply_events.key_id = lineage_roots.child_key_id
                and apply_events.segment = lineage_roots.child_segment
    ),

{% else %}

lineaged as (
    -- no key change among this run's events: a row's lineage is its own segment, and its key
    -- the key's own key_id (no alias of it: the scan's partitioning by key stays one partitioning
    -- that the union below can pass on)
    select
        apply_events.*,
        apply_events.segment as lineage_segment
    from apply_events
),
{% endif %}

{#- without key changes a lineage's key is its key's key_id: naming that column lets the windows
    over the key below reuse the lineage windows' shuffle (Spark does not see through the alias) -#}
{%- set lineage_key_column = 'lineage_key_id' if plans_key_changes else 'key_id' %}
{#- and a lineage's order is its key's event order, seq: a segment starts at an event and runs
    to the next segment's start in seq order (int_apply_events), so ordering by segment first
    changes nothing (the same rows, checked on the peer's 1 M events). Naming seq lets every
    window below share one sort of the events: two sorts less (ADR 0008) -#}
{%- set lineage_sort_columns = 'lineage_segment, event_class, event_order, event_rank, kind, primary_key'
    if plans_key_changes else 'seq' %}
{%- set lineage_order_column = 'lineage_seq' if plans_key_changes else 'seq' %}

lineage_sequenced as (
    -- the windows over lineages partition by the lineage's key and order as the lineage's
    -- events (seq without key changes): one sort serves them all (ADR 0008)
    select
        *,
        row_number() over lineage_order as lineage_seq,
        -- uniform: every image of the lineage carries the same columns (full images, the
        -- common case), so the row after an event is the last image of its segment
        coalesce(
            min(case when sets_columns then sort_array(map_keys(image)) end) over lineage_whole
            = max(case when sets_columns then sort_array(map_keys(image)) end) over lineage_whole,
            true
        ) as is_uniform,
        last(
            case when sets_columns then named_struct('segment', lineage_segment, 'image', image) end, true
        ) over lineage_upto as last_image,
        -- every column an image of the lineage carries
        array_distinct(flatten(collect_list(case when sets_columns then map_keys(image) end) over lineage_whole))
            as column_names
    from lineaged
    window
        lineage_order as (partition by {{ lineage_key_column }} order by {{ lineage_sort_columns }}),
        lineage_upto as (
            partition by {{ lineage_key_column }} order by {{ lineage_sort_columns }}
            rows between unbounded preceding and current row
        ),
        lineage_whole as (
            partition by {{ lineage_key_column }} order by {{ lineage_sort_columns }}
            rows between unbounded preceding and unbounded following
        )
),

column_filled as (
    -- of a lineage whose images carry different column sets (compressed images), one row per
    -- event and column, with the last value an image of the lineage carried for the column up
    -- to the event and the segment it came from (a struct keeps an explicit NULL apart from an
    -- absent column); of a uniform lineage, the event alone (column_name null). Its windows
    -- partition by the lineage's key and more: the events keep their partitioning, no shuffle
    select
        *,
        last(
            case
                when not is_uniform and sets_columns and map_contains_key(image, column_name)
                    then named_struct('segment', lineage_segment, 'value', image[column_name])
            end,
            true
        ) over (
            partition by {{ lineage_key_column }}, column_name
            order by lineage_seq rows between unbounded preceding and current row
        ) as filled
    from lineage_sequenced
        lateral view posexplode(case when is_uniform then array(cast(null as string)) else column_names end)
        as column_position, column_name
),

column_gathered as (
    -- the columns whose last value came from the event's segment, gathered onto its first row
    select
        *,
        sort_array(collect_list(
            case
                when filled['segment'] = lineage_segment
                    then named_struct('key', column_name, 'value', filled['value'])
            end
        ) over (partition by {{ lineage_key_column }}, {{ lineage_order_column }})) as gathered_entries
    from column_filled
),

stepped as (
    -- the row after each event, as entries sorted by column name (comparable with =): of a
    -- uniform lineage, the last image of its segment up to it (none: no row); of a lineage
    -- whose images differ, the columns whose last value came from its segment (ADR 0008)
    select
        * except (last_image, column_names, column_position, column_name, filled, gathered_entries),
        case
            when is_uniform
                then coalesce(
                    sort_array(map_entries(case when last_image['segment'] = lineage_segment then last_image['image'] end)),
                    cast(array() as array<struct<key: string, value: string>>)
                )
            -- a column outside the event's table_columns was dropped at the source (ADR 0024)
            else filter(gathered_entries, e -> table_columns is null or array_contains(table_columns, e.key))
        end as entries
    from column_gathered
    where column_position = 0
),

compared as (
    select
        *,
        case when is_live then map_from_entries(entries) end as row_after,
        coalesce(lag(is_live) over key_order, false) as was_live,
        lag(case when is_live then map_from_entries(entries) end) over key_order as row_before,
        lag(entries) over key_order as previous_entries,
        -- the key's last new event (its other figures are the same on each of its rows): a
        -- window over the partition the windows above use, not an aggregate joined back
        max(case when kind != 'BASE' then event_order end) over (partition by key_id) as last_new_event_order
    from stepped
    window key_order as (partition by key_id order by seq)
),

flagged as (
    select
        *,
        case
            when kind = 'BASE' then true
            -- SET and UPDATE open a version when the row changes
            when kind in ('SET', 'OVERLAY') then not (was_live and previous_entries = entries)
            -- REMOVE opens a deleted version that keeps the last values of a live row
            else was_live
        end as opens_changed_version,
        -- a DELETE of a key never seen keeps its before image on record (first event only)
        kind = 'REMOVE' and not was_live and image is not null as is_unseen_delete
    from compared
),

opened as (
    select
        *,
        opens_changed_version or (
            is_unseen_delete
            and coalesce(sum(case when opens_changed_version or is_unseen_delete then 1 else 0 end) over (
                partition by key_id
                order by seq rows between unbounded preceding and 1 preceding
            ), 0) = 0
        ) as opens_version
    from flagged
),

versions as (
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        key_id,
        seq,
        case
            when kind = 'BASE' then base_version
            else named_struct(
                'opened_order', event_order,
                'opened_at', committed_at,
                'operation', operation,
                'row', case when kind = 'REMOVE' then coalesce(row_before, image) else row_after end,
                'is_deleted', kind = 'REMOVE'
            )
        end as version,
        last_new_event_order,
        is_rebuilt,
        previous_last_event_order,
        previous_rebuilt_generation,
        previous_version_count
    from opened
    where opens_version
),

closed as (
    select
        *,
        lead(version) over (partition by key_id order by seq) as next_version,
        -- the versions this run wrote for the key
        count(*) over (partition by key_id) as written_version_count
    from versions
),

final as (
    select
        to_json(array(
            closed.feed, closed.source_schema, closed.source_table, closed.primary_key,
            closed.version.opened_order.change_position, closed.version.opened_order.source_file,
            lpad(cast(closed.version.opened_order.record_index as string), 12, '0')
        )) as version_id,
        closed.source_schema,
        closed.source_table,
        closed.primary_key,
        closed.key_id,
        closed.version,
        closed.version.opened_order.change_position as valid_from_position,
        closed.version.opened_at as valid_from,
        closed.next_version.opened_order.change_position as valid_to_position,
        closed.next_version.opened_at as valid_to,
        closed.next_version.operation as closed_by_operation,
        closed.next_version is null as is_current,
        -- the key's versions in the history mart: a key continued on the fast path wrote its
        -- current version again (the same version_id, once in the mart) and its new versions;
        -- a rebuilt or new key wrote all of its versions
        case
            when closed.is_rebuilt or closed.previous_version_count is null then closed.written_version_count
            else closed.previous_version_count + closed.written_version_count - 1
        end as version_count,
        closed.is_rebuilt,
        case
            when closed.is_rebuilt or closed.previous_rebuilt_generation is null then '{{ generation }}'
            else closed.previous_rebuilt_generation
        end as rebuilt_generation,
        greatest(
            case when not closed.is_rebuilt then closed.previous_last_event_order end,
            closed.last_new_event_order
        ) as last_event_order,
        closed.feed,
        '{{ generation }}' as history_generation
    from closed
)

select * from final
