{% macro cdc_transaction_is_complete(marker_count, end_sequence, distinct_sequence_count) %}
    {#- Whether a transaction is complete (macros/_macros.yml). -#}
    ({{ marker_count }} = 0 or (
        {{ end_sequence }} is not null
        and {{ distinct_sequence_count }} >= {{ end_sequence }}
    ))
{% endmacro %}
