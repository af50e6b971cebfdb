{% macro cdc_position_in_transaction(partition_by='feed, transaction_id') %}
    {#- The order of a change inside its transaction (macros/_macros.yml). -#}
    row_number() over (
        partition by {{ partition_by }}
        order by change_position, source_file, record_index
    )
{% endmacro %}
