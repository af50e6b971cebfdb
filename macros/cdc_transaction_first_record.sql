{% macro cdc_transaction_first_record(partition_by='feed, transaction_id') %}
    {#- Where each record's transaction starts (macros/_macros.yml). -#}
    min(ingest_batch_id) over (partition by {{ partition_by }}) as transaction_first_batch_id,
    min(named_struct('source_file', source_file, 'record_offset', record_offset)) over (
        partition by {{ partition_by }}
    ) as transaction_first_record
{% endmacro %}
