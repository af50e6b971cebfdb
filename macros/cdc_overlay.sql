{% macro cdc_overlay(row, image) %}
    {#- An image laid over a row, absent columns kept (macros/_macros.yml). -#}
    map_concat(
        map_filter(coalesce({{ row }}, cast(map() as map<string, string>)), (k, v) -> not map_contains_key({{ image }}, k)),
        {{ image }}
    )
{% endmacro %}
