{#-
    Linkexpress extract records in the canonical change event shape (DESIGN.md §5).
    change_position = the file's sort name + 12-digit record index: files sort by name, or by
    the list of option file_order (cdc_file_sort_name), then by name.
    Full extract rows (0x0000) are LOAD rows, one transaction per file, so a full extract
    replaces its table (int_table_resets: rows loaded earlier and missing from the extract are
    gone). An empty full extract (0xffff) is a TRUNCATE (option empty_full_extract_as:
    truncate), or an EVENT that changes nothing (marker).
    One-table files (table unit, group full extracts) are one transaction each, as the decoder
    marks them; in group differential files a transaction runs up to the next commit record
    (0x8000), across files (found per file, then carried over one row per file), and records
    with no commit after them yet stay pending. The file
    carries no times: committed_at is the extract file's modification time (UTC).
-#}

{{ config(enabled=cdc_format_enabled('linkexpress_extract')) }}

with

raw_records as (
    select
        *,
        {{ cdc_file_sort_name('linkexpress_extract', 'file_name') }} as file_sort_name
    from {{ source('linkexpress_extract', 'raw_linkexpress_extract') }}
    where {{ cdc_committed_batches() }} and {{ cdc_working_batches('linkexpress_extract') }}
),

file_times as (
    select
        feed,
        source_file,
        min(modification_time) as file_modified_at
    from {{ source('cdc', 'raw_ingested_files') }}
    group by feed, source_file
),

positioned as (
    -- one shuffle of the wide rows, by file: the deduplication (record_position starts with
    -- the file name) and the per-file window below both reuse it
    select /*+ repartition(raw_records.feed, raw_records.file_name) */
        raw_records.*,
        file_times.file_modified_at,
        concat(raw_records.file_sort_name, ':', lpad(cast(raw_records.record_index as string), 12, '0'))
            as record_position
    from raw_records
    left join file_times
        on
            raw_records.feed = file_times.feed
            and raw_records.source_file = file_times.source_file
),

deduplicated as (
    {{ cdc_first_delivery('positioned', 'feed, file_name, record_position') }}
),

commits_in_file as (
    -- the first commit record (0x8000) at or after this row in its own file, as a running
    -- frame in descending order (a current-row-to-unbounded-following frame is n² in Spark);
    -- per file, so a feed's files spread over cores
    select
        *,
        min(case when operation_code = 32768 then record_position end) over (
            partition by feed, file_name
            order by record_position desc
            rows between unbounded preceding and current row
        ) as commit_in_file
    from deduplicated
    where transaction_id is null
),

file_first_commits as (
    select
        feed,
        file_name,
        file_sort_name,
        min(commit_in_file) as first_commit_in_file
    from commits_in_file
    group by feed, file_name, file_sort_name
),

carried_commits as (
    -- one row per file: the first commit record of the feed's later files, for the group
    -- records of a file whose transaction commits in a later file
    select
        feed,
        file_name,
        min(first_commit_in_file) over (
            partition by feed
            order by file_sort_name desc
            rows between unbounded preceding and 1 preceding
        ) as carried_commit
    from file_first_commits
),

commits_found as (
    select
        commits_in_file.*,
        coalesce(commits_in_file.commit_in_file, carried_commits.carried_commit) as next_commit_position
    from commits_in_file
    inner join carried_commits
        on
            commits_in_file.feed = carried_commits.feed
            and commits_in_file.file_name = carried_commits.file_name
    union all
    select
        *,
        cast(null as string) as commit_in_file,
        cast(null as string) as next_commit_position
    from deduplicated
    where transaction_id is not null
),

record_changes as (
    select
        feed,
        source_schema,
        source_table,
        record_position as change_position,
        case operation_code
            when 0 then 'LOAD'
            when 1 then 'INSERT'
            when 2 then 'UPDATE'
            when 3 then 'DELETE'
            -- an empty full extract: a TRUNCATE, or with empty_full_extract_as: marker a
            -- control record that changes nothing
            when 65535 then case
                when {{ cdc_feed_option('linkexpress_extract', 'empty_full_extract_as', 'truncate') }} = 'marker'
                    then 'EVENT'
                else 'TRUNCATE'
            end
        end as operation,
        coalesce(transaction_id, next_commit_position, concat('open:', feed)) as transaction_id,
        transaction_id is not null or next_commit_position is not null as has_transaction_end,
        is_transaction_end as marked_transaction_end,
        file_modified_at as committed_at,
        case when operation_code = 3 then data end as before_image,
        case when operation_code in (0, 1, 2) then data end as after_image,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
    from commits_found
    where operation_code != 32768
),

sequenced as (
    select
        *,
        {{ cdc_transaction_first_record() }},
        concat_ws(':', feed, change_position) as change_id,
        {{ cdc_position_in_transaction() }} as transaction_sequence,
        cast(null as array<string>) as changed_columns,
        cast(null as array<string>) as table_columns,
        coalesce(
            marked_transaction_end,
            has_transaction_end and row_number() over (
                partition by feed, transaction_id
                order by change_position desc
            ) = 1
        ) as is_transaction_end
    from record_changes
),

transaction_figures as (
    -- the transaction's completeness (DESIGN.md §6.1), over the partition sequenced already has
    select
        *,
        {{ cdc_transaction_figures() }}
    from sequenced
),

final as (
    select {{ cdc_change_columns() | join(', ') }}
    from transaction_figures
)

select * from final
