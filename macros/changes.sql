{% macro cdc_committed_batches() %}
    {#-
        Predicate keeping raw rows of committed ingest batches only: a batch commits when its
        manifest rows are written (last step of staging), so rows of a run that was killed
        half way are ignored and re-ingested by the next run. The manifest is broadcast (a
        hint: the metastore has no size for it, so Spark would otherwise shuffle every raw row
        by batch for this semi-join before the model's own shuffles).
    -#}
    ingest_batch_id in (
        select /*+ BROADCAST(ingested_files) */ ingested_files.ingest_batch_id
        from {{ source('cdc', 'raw_ingested_files') }} as ingested_files
    )
{% endmacro %}


{% macro cdc_change_columns() %}
    {#- The columns of the canonical change event (DESIGN.md §5), in order. -#}
    {{ return([
        'change_id', 'feed', 'source_schema', 'source_table', 'change_position', 'operation',
        'transaction_id', 'transaction_sequence', 'is_transaction_end', 'committed_at',
        'before_image', 'after_image', 'changed_columns',
        'source_file', 'record_offset', 'record_index', 'ingest_batch_id',
        'transaction_first_batch_id', 'transaction_first_record',
        'transaction_change_count', 'end_sequence', 'is_transaction_complete',
    ]) }}
{% endmacro %}


{% macro cdc_primary_key(key_columns, before_image, after_image) %}
    {#-
        Canonical text of a row's primary key: a JSON array of the key values (canonical
        text, JSON null for NULL) in key order, e.g. ["7","2024-01-05"]. Unambiguous for
        composite keys. The after image wins; a key column absent from it is taken from the
        before image (DELETE rows have only a before image). Null when there are no key columns.
    -#}
    (case
        when {{ key_columns }} is null or size({{ key_columns }}) = 0 then null
        else to_json(transform(
            {{ key_columns }},
            k -> case
                when {{ after_image }} is not null and map_contains_key({{ after_image }}, k) then {{ after_image }}[k]
                else {{ before_image }}[k]
            end
        ))
    end)
{% endmacro %}


{% macro cdc_change_order(prefix='') %}
    {#-
        The total order of changes inside a feed: change_position, then file name and record
        index (the tie-break of equal positions, e.g. full-load rows), as a struct that
        max_by / min_by and ORDER BY accept.
    -#}
    named_struct(
        'change_position', {{ prefix }}change_position,
        'source_file', {{ prefix }}source_file,
        'record_index', {{ prefix }}record_index
    )
{% endmacro %}


{% macro cdc_first_delivery(relation, partition_by) %}
    {#-
        Rows of `relation` (a CTE name) keeping the first ingest of each delivery key: re-delivered
        records (the same file landed twice, a replayed dump) keep the earliest batch, file and
        record. `partition_by` is the SQL list of expressions that identify one change.
    -#}
    select * from (
        select
            *,
            row_number() over (
                partition by {{ partition_by }}
                order by ingest_batch_id, source_file, record_index
            ) as delivery_number
        from {{ relation }}
    ) as numbered_deliveries
    where delivery_number = 1
{% endmacro %}


{% macro cdc_position_in_transaction(partition_by='feed, transaction_id') %}
    {#-
        1-based order of a change inside its transaction, by change order (for feeds without a
        counter). `partition_by` identifies a transaction; a list that adds a column the
        transaction determines (its stream) lets the window reuse a shuffle by that column.
    -#}
    row_number() over (
        partition by {{ partition_by }}
        order by change_position, source_file, record_index
    )
{% endmacro %}


{% macro cdc_qlik_transaction_id(transaction_id, operation) %}
    {#-
        The transaction of a Qlik Replicate change (change tables, Kafka messages): the
        vendor's transaction id (SQL expression `transaction_id`); without one, a full-load row
        (`operation` = 'LOAD') belongs to its table's load (load:<schema>.<table>) and a change
        is a transaction of its own (change:<change_position>). Reads source_schema,
        source_table and change_position.
    -#}
    coalesce(
        {{ transaction_id }},
        case
            when {{ operation }} = 'LOAD' then concat('load:', source_schema, '.', source_table)
            else concat('change:', change_position)
        end
    )
{% endmacro %}


{% macro cdc_transaction_figures(partition_by='feed, transaction_id') %}
    {#-
        Three window columns over each change's transaction (the partition `partition_by`,
        over this run's working set): transaction_change_count, the number of its changes;
        end_sequence, the transaction_sequence of its end marker if one arrived; and
        is_transaction_complete (cdc_transaction_is_complete, DESIGN.md §6.1). For the staging
        models, which already partition their rows by transaction: no shuffle of their own.
    -#}
    count(*) over (partition by {{ partition_by }}) as transaction_change_count,
    max(case when is_transaction_end then transaction_sequence end) over (partition by {{ partition_by }})
        as end_sequence,
    {{ cdc_transaction_is_complete(
        'count(is_transaction_end) over (partition by ' ~ partition_by ~ ')',
        'max(case when is_transaction_end then transaction_sequence end) over (partition by ' ~ partition_by ~ ')',
        'size(collect_set(transaction_sequence) over (partition by ' ~ partition_by ~ '))',
    ) }} as is_transaction_complete
{% endmacro %}


{% macro cdc_transaction_is_complete(marker_count, end_sequence, distinct_sequence_count) %}
    {#-
        True when a transaction is complete (DESIGN.md §6.1): its feed sends no end markers
        (marker_count = 0), or the end marker arrived and so did every sequence number up to
        it (formats/qlik_kafka_messages.md, "when is a transaction complete").
    -#}
    ({{ marker_count }} = 0 or (
        {{ end_sequence }} is not null
        and {{ distinct_sequence_count }} >= {{ end_sequence }}
    ))
{% endmacro %}


{% macro cdc_transaction_first_record(partition_by='feed, transaction_id') %}
    {#-
        Two window columns locating the earliest record of each record's transaction (the
        partition `partition_by`): transaction_first_batch_id, the earliest ingest batch holding
        one of its records, and transaction_first_record, the first of its records by landing
        file (in name order) and byte offset, as struct<source_file, record_offset>. A pending
        transaction's records are read again from there by the next run (cdc_working_set,
        ADR 0007).
    -#}
    min(ingest_batch_id) over (partition by {{ partition_by }}) as transaction_first_batch_id,
    min(named_struct('source_file', source_file, 'record_offset', record_offset)) over (
        partition by {{ partition_by }}
    ) as transaction_first_record
{% endmacro %}
