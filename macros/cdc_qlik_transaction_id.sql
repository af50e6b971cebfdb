{% macro cdc_qlik_transaction_id(transaction_id, operation) %}
    {#- The transaction of a Qlik Replicate change (macros/_macros.yml). -#}
    coalesce(
        {{ transaction_id }},
        case
            when {{ operation }} = 'LOAD' then concat('load:', source_schema, '.', source_table)
            else concat('change:', change_position)
        end
    )
{% endmacro %}
