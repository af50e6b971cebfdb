{{ config(severity='error') }}
{#- change_position must sort lexically: within a feed every position has the same width. -#}

with

change_log as (
    select * from {{ ref('change_log') }}
),

widths as (
    select
        feed,
        count(distinct length(change_position)) as width_count
    from change_log
    group by feed
)

select * from widths
where width_count > 1
