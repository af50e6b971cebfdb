{#-
    Qlik Replicate change tables in the canonical change event shape (DESIGN.md §5).
    Before images (change_oper B) are paired with their UPDATE as the vendor's documented
    self-join on change_seq does (seeds/qlik_change_tables_ja.txt), by a window over the
    position; full-load rows become LOAD, at 35 zeros (before every change) or, with option
    load_position dfm_start, at the start of writing of their file (a reload). A LOAD's
    change_id ends with its table, file name and record index, which any copy keeps (issue 76).
-#}

{{ config(enabled=cdc_format_enabled('qlik_change_tables')) }}

with

raw_change_table_rows as (
    select * from {{ source('qlik_change_tables', 'raw_qlik_change_tables') }}
    where {{ cdc_working_batches('qlik_change_tables') }}
),

classified as (
    select
        *,
        case
            when file_kind = 'full_load' then 'LOAD'
            when header__operation = 'TRUNCATE' then 'TRUNCATE'
            when header__change_oper = {{ cdc_feed_option('qlik_change_tables', 'truncate_oper_code', '') }}
                then 'TRUNCATE'
            when header__change_oper = 'I' then 'INSERT'
            when header__change_oper = 'U' then 'UPDATE'
            when header__change_oper = 'D' then 'DELETE'
            when header__change_oper = 'B' then 'BEFOREIMAGE'
            else header__operation
        end as operation,
        case
            -- option load_position dfm_start: the time part of a change_seq (YYYYMMDDHHmmSShh,
            -- UTC) of the .dfm's fileInfo.startWriteTimestamp, then 19 zeros: after the changes
            -- made before the (re)load started, before those cached during it
            when
                file_kind = 'full_load'
                and {{ cdc_feed_option('qlik_change_tables', 'load_position', 'zeros') }} = 'dfm_start'
                then concat(
                    date_format(cast(start_write_timestamp as timestamp), 'yyyyMMddHHmmssSS'), repeat('0', 19)
                )
            when file_kind = 'full_load' then repeat('0', 35)
            else header__change_seq
        end as change_position
    from raw_change_table_rows
),

transactions as (
    -- one shuffle of the wide rows, by transaction: the pairing, the deduplication and the
    -- transaction windows below all partition by (feed, transaction_id, ...), so they reuse it
    -- (a before image and its UPDATE, and every delivery of a change, share the transaction)
    select /*+ repartition(feed, transaction_id) */
        *,
        {{ cdc_qlik_transaction_id('header__transaction_id', 'operation') }} as transaction_id
    from classified
),

paired as (
    -- the vendor's self-join on change_seq (seeds/qlik_change_tables_ja.txt) as a window: the
    -- before image (change_oper B) delivered first at a position, beside every row of that
    -- position. Ordered by operation first: the B rows stay in delivery order among
    -- themselves, and the sort is the one the first-delivery window below needs (partition
    -- by the same columns and operation, order by delivery), so Spark sorts the rows once
    -- for both (ADR 0012)
    select
        *,
        first(case when operation = 'BEFOREIMAGE' then named_struct('data', data) end, true) over (
            partition by feed, transaction_id, delivery_key
            order by operation, ingest_batch_id, source_file, record_index
            rows between unbounded preceding and unbounded following
        ).data as position_before_data
    from (
        select
            *,
            -- a change is delivered once per position; a LOAD row (no position) is its table, file name and index
            case
                when operation = 'LOAD' then concat_ws(':', source_schema || '.' || source_table, {{ cdc_landed_file_name('source_file') }}, string(record_index))
                else change_position
            end as delivery_key
        from transactions
    ) as keyed
),

deduplicated as (
    {{ cdc_first_delivery('paired', 'feed, transaction_id, delivery_key, operation') }}
),

canonical as (
    select
        concat_ws(':', feed, change_position, case when operation = 'LOAD' then delivery_key end) as change_id,
        feed,
        source_schema,
        source_table,
        change_position,
        operation,
        transaction_id,
        cast(null as boolean) as is_transaction_end,
        coalesce(
            to_timestamp(header__timestamp),
            to_timestamp(substr(header__change_seq, 1, 16), 'yyyyMMddHHmmssSS')
        ) as committed_at,
        case
            when operation = 'UPDATE' then position_before_data
            when operation = 'DELETE' then data
        end as before_image,
        case when operation in ('INSERT', 'UPDATE', 'LOAD') then data end as after_image,
        case
            when operation in ('INSERT', 'UPDATE', 'DELETE')
                then {{ cdc_changed_columns(
                    'header__change_mask', 'column_names', 'header_column_count',
                    cdc_feed_option('qlik_change_tables', 'mask_bit_order', 'lsb_last_hex')
                ) }}
        end as changed_columns,
        case
            -- column_names starts with the file's header__ columns (the change mask's first bits)
            when operation in ('INSERT', 'UPDATE', 'LOAD') then {{ cdc_table_columns(
                'slice(column_names, header_column_count + 1, size(column_names))', 'data'
            ) }}
        end as table_columns,
        source_file,
        record_offset,
        record_index,
        ingest_batch_id
    from deduplicated
    where operation != 'BEFOREIMAGE'
),

sequenced as (
    select
        *,
        {{ cdc_transaction_first_record() }},
        {{ cdc_position_in_transaction() }} as transaction_sequence
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
