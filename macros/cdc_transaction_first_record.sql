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
