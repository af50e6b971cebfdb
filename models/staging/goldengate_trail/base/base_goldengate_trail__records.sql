{#-
    The GoldenGate trail records of this run's working set, each delivered once, with their
    transaction (DESIGN.md §5, §6.1): a record belongs to the transaction begun by the last
    TransInd 0 or 3 record at or before it, in its trail file or, for a transaction that
    continues from an earlier file, in the feed's earlier files (found per file, then carried
    over one row per file). record_position = 10-digit trail seqno + 20-digit RBA; each record
    also carries the record before it in its transaction (previous_*), for the FieldComp
    before image (B record) that precedes its UPDATE.
-#}

{{ config(enabled=cdc_format_enabled('goldengate_trail')) }}

with

raw_records as (
    select * from {{ source('goldengate_trail', 'raw_goldengate_trail') }}
    where {{ cdc_working_batches('goldengate_trail') }}
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
)

select * from transactions_marked
