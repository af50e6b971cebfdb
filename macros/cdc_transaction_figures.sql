{% macro cdc_transaction_figures(partition_by='feed, transaction_id') %}
    {#- Three window columns over each change's transaction (macros/_macros.yml). -#}
    count(*) over (partition by {{ partition_by }}) as transaction_change_count,
    max(case when is_transaction_end then transaction_sequence end) over (partition by {{ partition_by }})
        as end_sequence,
    {{ cdc_transaction_is_complete(
        'count(is_transaction_end) over (partition by ' ~ partition_by ~ ')',
        'max(case when is_transaction_end then transaction_sequence end) over (partition by ' ~ partition_by ~ ')',
        'size(collect_set(transaction_sequence) over (partition by ' ~ partition_by ~ '))',
    ) }} as is_transaction_complete
{% endmacro %}
