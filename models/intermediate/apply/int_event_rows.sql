{#-
    The row after each event of the keys this run applies (DESIGN.md §6, ADR 0030), one row per
    event of int_apply_events with `entries`: the row as entries sorted by column name. For
    every column, the last value an image of the event's segment carried up to it; a key
    change's SET laid over the row the old key had (int_key_change_rows, ADR 0026). Every
    window partitions by the key and orders by seq: int_apply_events is bucketed by key_id, so
    none shuffles, and one sort serves them all.
-#}

with

apply_events as (
    select * from {{ ref('int_apply_events') }}
),

carried as (
    select * from {{ ref('int_key_change_rows') }}
),

events as (
    -- the SET of a key change's new key laid over the row it carries (a broadcast: no shuffle)
    select /*+ broadcast(carried) */
        apply_events.* except (image),
        case
            when carried.row is not null then {{ cdc_overlay('carried.row', 'apply_events.image') }}
            else apply_events.image
        end as image
    from apply_events
    left join carried
        on
            apply_events.key_id = carried.child_key_id
            and apply_events.segment = carried.child_segment
            and apply_events.kind = 'SET'
            and apply_events.source_key_id is not null
),

key_sequenced as (
    -- every window here partitions by the key and orders by seq: int_apply_events is bucketed by
    -- key_id, so none shuffles, and one sort serves them all (ADR 0008)
    select
        *,
        -- uniform: every image of the key carries the same columns (full images, the common
        -- case), so the row after an event is the last image of its segment
        coalesce(
            min(case when sets_columns then sort_array(map_keys(image)) end) over key_whole
            = max(case when sets_columns then sort_array(map_keys(image)) end) over key_whole,
            true
        ) as is_uniform,
        last(
            case when sets_columns then named_struct('segment', segment, 'image', image) end, true
        ) over key_upto as last_image,
        -- every column an image of the key carries
        array_distinct(flatten(collect_list(case when sets_columns then map_keys(image) end) over key_whole))
            as column_names
    from events
    window
        key_upto as (partition by key_id order by seq rows between unbounded preceding and current row),
        key_whole as (partition by key_id order by seq rows between unbounded preceding and unbounded following)
),

column_filled as (
    -- of a key whose images carry different column sets (compressed images), one row per event
    -- and column, with the last value an image of the key carried for the column up to the
    -- event and the segment it came from (a struct keeps an explicit NULL apart from an absent
    -- column); of a uniform key, the event alone (column_name null)
    select
        *,
        last(
            case
                when not is_uniform and sets_columns and map_contains_key(image, column_name)
                    then named_struct('segment', segment, 'value', image[column_name])
            end,
            true
        ) over (
            partition by key_id, column_name
            order by seq rows between unbounded preceding and current row
        ) as filled
    from key_sequenced
        lateral view posexplode(case when is_uniform then array(cast(null as string)) else column_names end)
        as column_position, column_name
),

column_gathered as (
    -- the columns whose last value came from the event's segment, gathered onto its first row
    select
        *,
        sort_array(collect_list(
            case
                when filled['segment'] = segment
                    then named_struct('key', column_name, 'value', filled['value'])
            end
        ) over (partition by key_id, seq)) as gathered_entries
    from column_filled
),

stepped as (
    -- the row after each event, as entries sorted by column name (comparable with =): of a
    -- uniform key, the last image of its segment up to it (none: no row); of a key whose
    -- images differ, the columns whose last value came from its segment (ADR 0008)
    select
        * except (last_image, column_names, column_position, column_name, filled, gathered_entries),
        case
            when is_uniform
                then coalesce(
                    sort_array(map_entries(case when last_image['segment'] = segment then last_image['image'] end)),
                    cast(array() as array<struct<key: string, value: string>>)
                )
            -- a column outside the event's table_columns was dropped at the source (ADR 0024)
            else filter(gathered_entries, e -> table_columns is null or array_contains(table_columns, e.key))
        end as entries
    from column_gathered
    where column_position = 0
)

select * from stepped
