{% macro cdc_table_columns(column_names, image) %}
    {#-
        The source table's columns when a change was written (ADR 0024): the columns of the
        table version the feed's metadata named for the record (`column_names`: a Kafka MD
        message, a `.dfm` or change-table header, a GoldenGate TDR or sourcedefs), together with
        the record's own image keys, so that a column the metadata lacks but the image carries
        is never taken away. Null when `column_names` is null (the feed names no column set).
    -#}
    (case
        when {{ column_names }} is not null
            then array_union({{ column_names }}, coalesce(map_keys({{ image }}), cast(array() as array<string>)))
    end)
{% endmacro %}
