{#-
    Qlik Replicate Kafka data messages in the canonical change event shape (DESIGN.md §5).
    REFRESH rows (full load) become LOAD, at position zero or, with option load_position
    explicit, at the change sequence option load_positions gives their dump (a reload during
    the stream; patterns match the dump's name without .gz). A LOAD's change_id ends with the
    message's topic, partition and offset, so a re-delivered dump (compressed, or under
    another folder) adds nothing to the log (issue 76). UPDATE carries both images in one
    message; a DELETE takes its before image from beforeData, else from data (option
    delete_image_field: before_then_data, the default; data; beforeData).
-#}

{{ config(enabled=cdc_format_enabled('qlik_kafka')) }}

{#- a dump the loader named: <topic>-<partition>-<first offset, 20 digits>.<ext> -#}
{%- set dump_name_pattern = "'^(.+)-([0-9]+)-([0-9]{20})[.][^.]+$'" -%}

with

raw_messages as (
    select
        *,
        {{ cdc_landed_file_name('source_file') }} as dump_name
    from {{ source('qlik_kafka', 'raw_qlik_kafka') }}
    where {{ cdc_working_batches('qlik_kafka') }}
),

classified as (
    select
        *,
        case when operation = 'REFRESH' then 'LOAD' else operation end as change_operation,
        case
            when operation = 'REFRESH'
                then {{ cdc_explicit_load_position('qlik_kafka', 'dump_name') }}
            else change_sequence
        end as change_position,
        -- a REFRESH message's identity in any copy of its dump (issue 76): its topic, partition
        -- and offset (the dump's first offset + record index - 1), else dump name and index
        case
            when operation != 'REFRESH' then null
            when dump_name rlike {{ dump_name_pattern }}
                then concat_ws(
                    ':',
                    regexp_extract(dump_name, {{ dump_name_pattern }}, 1),
                    regexp_extract(dump_name, {{ dump_name_pattern }}, 2),
                    string(cast(regexp_extract(dump_name, {{ dump_name_pattern }}, 3) as decimal(20, 0)) + record_index - 1)
                )
            else concat_ws(':', dump_name, string(record_index))
        end as load_identity
    from raw_messages
),

transactions as (
    -- one shuffle of the wide rows, by transaction: the deduplication (every delivery of a
    -- message carries its transaction) and the transaction windows below both reuse it
    select /*+ repartition(feed, resolved_transaction_id) */
        *,
        {{ cdc_qlik_transaction_id('transaction_id', 'change_operation') }} as resolved_transaction_id
    from classified
),

deduplicated as (
    {{ cdc_first_delivery(
        'transactions',
        "feed, resolved_transaction_id, case when change_operation = 'LOAD' then load_identity else change_position end"
    ) }}
),

canonical as (
    select
        case
            when change_operation = 'LOAD'
                then concat_ws(':', feed, change_position, load_identity)
            else concat_ws(':', feed, change_position)
        end as change_id,
        feed,
        source_schema,
        source_table,
        change_position,
        change_operation as operation,
        resolved_transaction_id as transaction_id,
        transaction_event_counter,
        transaction_last_event as is_transaction_end,
        to_timestamp(timestamp) as committed_at,
        case
            when change_operation = 'UPDATE' then before_data
            when change_operation = 'DELETE'
                then
                    case {{ cdc_feed_option('qlik_kafka', 'delete_image_field', 'before_then_data') }}
                        when 'data' then data
                        when 'beforeData' then before_data
                        else coalesce(before_data, data)
                    end
        end as before_image,
        case when change_operation in ('INSERT', 'UPDATE', 'LOAD') then data end as after_image,
        {{ cdc_changed_columns(
            'change_mask', 'column_names', 0,
            cdc_feed_option('qlik_kafka', 'mask_bit_order', 'lsb_last_hex')
        ) }} as changed_columns,
        case
            when change_operation in ('INSERT', 'UPDATE', 'LOAD') then {{ cdc_table_columns('column_names', 'data') }}
        end as table_columns,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
    from deduplicated
),

sequenced as (
    select
        *,
        {{ cdc_transaction_first_record() }},
        coalesce(
            cast(transaction_event_counter as int),
            {{ cdc_position_in_transaction() }}
        ) as transaction_sequence
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
