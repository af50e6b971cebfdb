{#-
    HiRDB Datareplicator update-SQL lines in the canonical change event shape (DESIGN.md §5).
    change_position = file name + 12-digit line number. A transaction is the run of lines up to
    the next COMMIT line of the same SQLTXT stream, across the appended tail of a file and the
    stream's later files; its id is the COMMIT line's position, and lines with no COMMIT after
    them yet stay pending. PURGE TABLE is a TRUNCATE; HDEEVENT lines stay in the change log
    as EVENT markers that change no rows. The commit time is the transaction's latest statement
    stamp (formats/hirdb_update_sql.md, Operations).
-#}

{{ config(enabled=cdc_format_enabled('hirdb_update_sql')) }}

with

raw_lines as (
    select * from {{ source('hirdb_update_sql', 'raw_hirdb_update_sql') }}
    where {{ cdc_working_batches('hirdb_update_sql') }}
),

positioned as (
    -- one shuffle of the wide rows, by stream (a file belongs to one stream, a transaction to
    -- one stream): the deduplication, the COMMIT windows and the transaction windows below all
    -- partition by (feed, stream, ...), so they reuse it
    select /*+ repartition(feed, stream) */
        *,
        concat(file_name, ':', lpad(cast(record_index as string), 12, '0')) as line_position
    from raw_lines
),

deduplicated as (
    {{ cdc_first_delivery('positioned', 'feed, stream, line_position') }}
),

commits_found as (
    select
        *,
        min(case when statement_type = 'COMMIT' then line_position end) over (
            partition by feed, stream
            -- the first COMMIT at or after this row, as a running frame in descending order:
            -- Spark recomputes a current-row-to-unbounded-following frame for every row (n²)
            order by line_position desc
            rows between unbounded preceding and current row
        ) as commit_position
    from deduplicated
),

statements as (
    select
        *,
        coalesce(commit_position, concat('open:', stream)) as resolved_transaction_id,
        max(update_time_utc) over (
            partition by feed, stream, commit_position
        ) as transaction_time,
        case statement_type
            when 'PURGE' then 'TRUNCATE'
            else statement_type
        end as operation,
        {{ cdc_feed_option('hirdb_update_sql', 'where_image', 'after') }} as where_image
    from commits_found
    where statement_type != 'COMMIT'
),

canonical as (
    select
        concat_ws(':', feed, line_position) as change_id,
        feed,
        source_schema,
        source_table,
        line_position as change_position,
        operation,
        resolved_transaction_id as transaction_id,
        commit_position is not null as has_transaction_end,
        to_timestamp(transaction_time) as committed_at,
        case
            when operation = 'DELETE' then where_data
            when operation = 'UPDATE' and where_image = 'before' then where_data
        end as before_image,
        case
            when operation = 'INSERT' then data
            when operation = 'UPDATE' and where_image = 'after'
                then map_concat(map_filter(where_data, (k, v) -> not map_contains_key(data, k)), data)
            when operation = 'UPDATE' then data
        end as after_image,
        stream,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
    from statements
),

sequenced as (
    select
        *,
        {{ cdc_transaction_first_record('feed, stream, transaction_id') }},
        {{ cdc_position_in_transaction('feed, stream, transaction_id') }} as transaction_sequence,
        cast(null as array<string>) as changed_columns,
        cast(null as array<string>) as table_columns,
        has_transaction_end and row_number() over (
            partition by feed, stream, transaction_id
            order by case when operation = 'EVENT' then 0 else 1 end desc, change_position desc
        ) = 1 as is_transaction_end
    from canonical
),

transaction_figures as (
    -- the transaction's completeness (DESIGN.md §6.1), over the partition sequenced already has
    select
        *,
        {{ cdc_transaction_figures('feed, stream, transaction_id') }}
    from sequenced
),

final as (
    select {{ cdc_change_columns() | join(', ') }}
    from transaction_figures
)

select * from final
