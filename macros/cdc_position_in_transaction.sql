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
