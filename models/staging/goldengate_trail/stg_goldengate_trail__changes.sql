{#-
    GoldenGate trail records in the canonical change event shape (DESIGN.md §5).
    change_position = 10-digit trail seqno + 20-digit RBA. Transactions are grouped from
    TransInd over the ordered records of the feed, across trail files (cdc_transaction_number).
    A FieldComp before image (B record) is paired with the A record that follows it, and the
    UPDATE takes the B record's position (option update_pair_position: before). Metadata (170),
    DDL (160) and unknown IOTypes change no rows.
-#}

with

raw_records as (
    select * from {{ source('goldengate_trail', 'raw_goldengate_trail') }}
    where {{ cdc_committed_batches() }}
),

positioned as (
    select
        *,
        concat(lpad(cast(trail_seqno as string), 10, '0'), lpad(cast(record_offset as string), 20, '0'))
            as record_position
    from raw_records
),

deduplicated as (
    {{ cdc_first_delivery('positioned', 'feed, record_position') }}
),

transaction_numbered as (
    select
        *,
        {{ cdc_transaction_number('trans_ind', 'record_position') }} as transaction_number
    from deduplicated
),

transactions_marked as (
    select
        *,
        coalesce(
            first(transaction_id, true) over (
                partition by feed, transaction_number
                order by record_position
                rows between unbounded preceding and unbounded following
            ),
            concat('gg:', first(record_position) over (
                partition by feed, transaction_number
                order by record_position
                rows between unbounded preceding and unbounded following
            ))
        ) as resolved_transaction_id,
        max(trans_ind in (2, 3)) over (partition by feed, transaction_number) as has_transaction_end,
        lag(io_type) over (partition by feed order by record_position) as previous_io_type,
        lag(before_after) over (partition by feed order by record_position) as previous_before_after,
        lag(table_name) over (partition by feed order by record_position) as previous_table_name,
        lag(audit_pos) over (partition by feed order by record_position) as previous_audit_pos,
        lag(record_position) over (partition by feed order by record_position) as previous_record_position,
        lag(data) over (partition by feed order by record_position) as previous_data
    from transaction_numbered
),

row_changes as (
    select
        *,
        case
            when io_type = 5 then 'INSERT'
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
        ) as has_paired_before_image
    from transactions_marked
    where
        io_type in (3, 5, 10, 15, 100, 115, 116, 134, 135, 140)
        and not (io_type in (10, 15) and before_after = 'B')
),

canonical as (
    select
        concat_ws(':', feed, case
            when has_paired_before_image then previous_record_position else record_position
        end) as change_id,
        feed,
        source_schema,
        source_table,
        case
            when has_paired_before_image then previous_record_position else record_position
        end as change_position,
        operation,
        resolved_transaction_id as transaction_id,
        transaction_number,
        has_transaction_end,
        to_timestamp(io_time) as committed_at,
        case
            when operation = 'DELETE' then data
            when has_paired_before_image then previous_data
            when operation = 'UPDATE' then before_data
        end as before_image,
        case when operation in ('INSERT', 'UPDATE') then data end as after_image,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
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

final as (
    select {{ cdc_change_columns() | join(', ') }}
    from sequenced
)

select * from final
