{% macro cdc_change_order(prefix='') %}
    {#- The total order of changes inside a feed, as a struct (macros/_macros.yml). -#}
    named_struct(
        'change_position', {{ prefix }}change_position,
        'source_file', {{ prefix }}source_file,
        'record_index', {{ prefix }}record_index
    )
{% endmacro %}
