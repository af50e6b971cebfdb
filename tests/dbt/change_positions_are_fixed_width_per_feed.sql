{{ config(severity='error') }}
{#-
    change_position must sort lexically: within a feed every position has the same width (for
    file-name positions, file:index, within the feed's files of one name length).
-#}

with

change_log as (
    select * from {{ ref('change_log') }}
),

widths as (
    select
        feed,
        length(regexp_extract(change_position, '^(.*):[^:]*$', 1)) as file_name_length,
        count(distinct length(change_position)) as width_count
    from change_log
    group by feed, length(regexp_extract(change_position, '^(.*):[^:]*$', 1))
)

select * from widths
where width_count > 1
