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
