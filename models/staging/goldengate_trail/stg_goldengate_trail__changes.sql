{#-
    GoldenGate trail records in the canonical change event shape (DESIGN.md §5).
    change_position = 10-digit trail seqno + 20-digit RBA. Transactions are grouped from
    TransInd: a record belongs to the transaction begun by the last TransInd 0 or 3 record at or
    before it, in its trail file or, for a transaction that continues from an earlier file, in
    the feed's earlier files (found per file, then carried over one row per file).
    A FieldComp before image (B record) is paired with the A record that follows it, and the
    UPDATE takes the B record's position (option update_pair_position: before) or the A
    record's (after). Metadata (170),
    DDL (160) and unknown IOTypes change no rows.
-#}

{{ config(enabled=cdc_format_enabled('goldengate_trail')) }}

with

raw_records as (
    select * from {{ source('goldengate_trail', 'raw_goldengate_trail') }}
    where {{ cdc_committed_batches() }} and {{ cdc_working_batches('goldengate_trail') }}
),

positioned as (
    -- one shuffle of the wide rows, by trail file: the deduplication (record_position starts
    -- with the file's seqno) and the per-file window below both reuse it
    select /*+ repartition(feed, trail_seqno) */
        *,
        concat(lpad(cast(trail_seqno as string), 10, '0'), lpad(cast(record_offset as string), 20, '0'))
            as record_position
    from raw_records
),

deduplicated as (
    {{ cdc_first_delivery('positioned', 'feed, trail_seqno, record_position') }}
),

transaction_starts_in_file as (
    -- the last record at or before this one, in its own trail file, that starts a transaction
    -- (TransInd 0 first or 3 only): a running frame per file, so a feed's files spread over cores
    select
        *,
        max(case when trans_ind in (0, 3) then record_position end) over (
            partition by feed, trail_seqno
            order by record_position
            rows between unbounded preceding and current row
        ) as start_in_file
    from deduplicated
),

file_last_starts as (
    select
        feed,
        trail_seqno,
        max(start_in_file) as last_start_in_file
    from transaction_starts_in_file
    group by feed, trail_seqno
),

carried_starts as (
    -- one row per trail file: the last transaction start of the feed's earlier files, for the
    -- records of a file that continue a transaction begun in an earlier file
    select
        feed,
        trail_seqno,
        max(last_start_in_file) over (
            partition by feed
            order by trail_seqno
            rows between unbounded preceding and 1 preceding
        ) as carried_start
    from file_last_starts
),

transaction_numbered as (
    select
        transaction_starts_in_file.*,
        -- records before the feed's first transaction start form one group of their own
        coalesce(
            transaction_starts_in_file.start_in_file, carried_starts.carried_start, ''
        ) as transaction_start
    from transaction_starts_in_file
    inner join carried_starts
        on
            transaction_starts_in_file.feed = carried_starts.feed
            and transaction_starts_in_file.trail_seqno = carried_starts.trail_seqno
),

transactions_marked as (
    select
        *,
        coalesce(
            first(transaction_id, true) over (
                partition by feed, transaction_start
                order by record_position
                rows between unbounded preceding and unbounded following
            ),
            concat('gg:', first(record_position) over (
                partition by feed, transaction_start
                order by record_position
                rows between unbounded preceding and unbounded following
            ))
        ) as resolved_transaction_id,
        max(trans_ind in (2, 3)) over (partition by feed, transaction_start) as has_transaction_end,
        -- every record counts, before images and metadata records included
        {{ cdc_transaction_first_record('feed, transaction_start') }},
        -- a FieldComp before image (B) and its after image are records of one transaction
        lag(io_type) over records_in_transaction as previous_io_type,
        lag(before_after) over records_in_transaction as previous_before_after,
        lag(table_name) over records_in_transaction as previous_table_name,
        lag(audit_pos) over records_in_transaction as previous_audit_pos,
        lag(record_position) over records_in_transaction as previous_record_position,
        lag(data) over records_in_transaction as previous_data
    from transaction_numbered
    window records_in_transaction as (partition by feed, transaction_start order by record_position)
),

row_changes as (
    select
        *,
        case
            when io_type = 5 then 'INSERT'
            -- an upsert (140) is an UPDATE unless the feed's upsert_as says INSERT
            when io_type = 140 and {{ cdc_feed_option('goldengate_trail', 'upsert_as', 'update') }} = 'insert'
                then 'INSERT'
            when io_type = 3 then 'DELETE'
            when io_type = 100 then 'TRUNCATE'
            when io_type in (10, 15, 115, 116, 134, 135, 140) then 'UPDATE'
        end as operation,
        coalesce(
            previous_before_after = 'B'
            and previous_io_type = io_type
            and previous_table_name = table_name
            and previous_audit_pos = audit_pos,
            false
        ) as has_paired_before_image,
        {{ cdc_feed_option('goldengate_trail', 'update_pair_position', 'before') }} as update_pair_position
    from transactions_marked
    where
        io_type in (3, 5, 10, 15, 100, 115, 116, 134, 135, 140)
        and not (io_type in (10, 15) and before_after = 'B')
),

canonical as (
    select
        concat_ws(':', feed, case
            when has_paired_before_image and update_pair_position = 'before' then previous_record_position
            else record_position
        end) as change_id,
        feed,
        source_schema,
        source_table,
        case
            when has_paired_before_image and update_pair_position = 'before' then previous_record_position
            else record_position
        end as change_position,
        operation,
        resolved_transaction_id as transaction_id,
        has_transaction_end,
        to_timestamp(io_time) as committed_at,
        case
            when operation = 'DELETE' then data
            when has_paired_before_image then previous_data
            when operation = 'UPDATE' then before_data
        end as before_image,
        case when operation in ('INSERT', 'UPDATE') then data end as after_image,
        case when operation in ('INSERT', 'UPDATE') then {{ cdc_table_columns('column_names', 'data') }} end
            as table_columns,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id,
        transaction_first_batch_id,
        transaction_first_record
    from row_changes
),

sequenced as (
    select
        *,
        {{ cdc_position_in_transaction() }} as transaction_sequence,
        case
            when before_image is not null and after_image is not null
                then filter(map_keys(after_image), k -> not (after_image[k] <=> before_image[k]))
        end as changed_columns,
        row_number() over (
            partition by feed, transaction_id
            order by change_position desc, source_file desc, record_index desc
        ) = 1 and has_transaction_end as is_transaction_end
    from canonical
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
