{{ config(severity='error') }}
{#-
    change_position must sort lexically: within a feed every position has the same width (for
    file-name positions, file:index, within the feed's files of one name length).

    Reads change_log's store, int_changes_logged: change_log shows the same positions, less the
    keyless first rows of a change logged again with its key (ADR 0021), and its join with the
    catalog is not needed here. The file name's length is the position's length less the part
    after its last ':' (no regular expression per row). The test hangs off int_staged_batches
    (depends_on), a model no other model reads, so it holds back none of the apply models.
-#}

-- depends_on: {{ ref('int_staged_batches') }}

with

logged_changes as (
    select * from {{ ref('int_changes_logged') }}
),

positions as (
    select
        feed,
        length(change_position) as position_length,
        greatest(length(change_position) - length(substring_index(change_position, ':', -1)) - 1, 0)
            as file_name_length
    from logged_changes
),

widths as (
    select
        feed,
        file_name_length,
        count(distinct position_length) as width_count
    from positions
    group by feed, file_name_length
)

select * from widths
where width_count > 1
