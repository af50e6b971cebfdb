{#-
    Linkexpress extract records in the canonical change event shape (DESIGN.md §5).
    change_position = the file's sort name + 12-digit record index: files sort by name, or by
    the list of option file_order (cdc_file_sort_name), then by name.
    Full extract rows (0x0000) are LOAD rows, one transaction per file, so a full extract
    replaces its table (int_table_resets: rows loaded earlier and missing from the extract are
    gone). An empty full extract (0xffff) is a TRUNCATE (option empty_full_extract_as:
    truncate), or an EVENT that changes nothing (marker).
    Transactions are found in base_linkexpress_extract__records; records with no commit after
    them yet stay pending. committed_at is the extract file's modification time (UTC).
-#}

{{ config(enabled=cdc_format_enabled('linkexpress_extract')) }}

with

records as (
    select * from {{ ref('base_linkexpress_extract__records') }}
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
    from records
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
