{% macro cdc_overlay(row, image) %}
    {#-
        SQL map: `image` laid over `row` (DESIGN.md §6.3): columns present in the image take its
        value (an explicit NULL included), absent columns keep the row's value. A null row is
        an empty one.
    -#}
    map_concat(
        map_filter(coalesce({{ row }}, cast(map() as map<string, string>)), (k, v) -> not map_contains_key({{ image }}, k)),
        {{ image }}
    )
{% endmacro %}
