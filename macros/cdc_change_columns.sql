{% macro cdc_change_columns() %}
    {#- The columns of the canonical change event (DESIGN.md §5), in order. -#}
    {{ return([
        'change_id', 'feed', 'source_schema', 'source_table', 'change_position', 'operation',
        'transaction_id', 'transaction_sequence', 'is_transaction_end', 'committed_at',
        'before_image', 'after_image', 'changed_columns', 'table_columns',
        'source_file', 'record_offset', 'record_index', 'ingest_batch_id',
        'transaction_first_batch_id', 'transaction_first_record',
        'transaction_change_count', 'end_sequence', 'is_transaction_complete',
    ]) }}
{% endmacro %}
