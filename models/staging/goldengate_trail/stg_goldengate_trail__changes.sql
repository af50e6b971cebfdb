{#-
    GoldenGate trail records in the canonical change event shape (DESIGN.md §5).
    change_position = 10-digit trail seqno + 20-digit RBA. Transactions are grouped from
    TransInd in base_goldengate_trail__records.
    A FieldComp before image (B record) is paired with the A record that follows it, and the
    UPDATE takes the B record's position (option update_pair_position: before) or the A
    record's (after). Metadata (170),
    DDL (160) and unknown IOTypes change no rows.
-#}

{{ config(enabled=cdc_format_enabled('goldengate_trail')) }}

with

records as (
    select * from {{ ref('base_goldengate_trail__records') }}
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
    from records
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
