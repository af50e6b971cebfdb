{% macro cdc_table_columns(column_names, image) %}
    {#- The source table's columns when a change was written (macros/_macros.yml). -#}
    (case
        when {{ column_names }} is not null
            then array_union({{ column_names }}, coalesce(map_keys({{ image }}), cast(array() as array<string>)))
    end)
{% endmacro %}
