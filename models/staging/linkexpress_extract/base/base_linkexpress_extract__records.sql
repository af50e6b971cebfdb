{#-
    The Linkexpress extract records of this run's working set, each delivered once, with the
    transaction it belongs to (DESIGN.md §5, §6.1): one-table files (table unit, group full
    extracts) are one transaction each, as the decoder marks them (transaction_id); in group
    differential files a transaction runs up to the next commit record (0x8000), across files
    (found per file, then carried over one row per file: next_commit_position, null while no
    commit follows yet). The file carries no times: file_modified_at is the extract file's
    modification time (UTC). record_position = the file's sort name + 12-digit record index.
-#}

{{ config(enabled=cdc_format_enabled('linkexpress_extract')) }}

with

raw_records as (
    select
        *,
        {{ cdc_file_sort_name('linkexpress_extract', 'file_name') }} as file_sort_name
    from {{ source('linkexpress_extract', 'raw_linkexpress_extract') }}
    where {{ cdc_working_batches('linkexpress_extract') }}
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
)

select * from commits_found
