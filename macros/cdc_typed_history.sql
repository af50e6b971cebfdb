{% macro cdc_typed_history(feed, source_schema, source_table) %}
    {#-
        Body of a typed history model (models/marts/tables/<feed>__<schema>__<table>__history.sql,
        a view): the table's SCD type 2 versions from the history mart, one column per catalog
        column cast from canonical text to its spark_type, with valid_from / valid_to (UTC commit
        times), the opening and closing change positions, is_current and is_deleted.
    -#}
    {{ cdc_typed_rows(
        'history', feed, source_schema, source_table,
        ['version_id', 'primary_key'],
        ['valid_from', 'valid_to', 'valid_from_position', 'valid_to_position',
         'opened_by_operation', 'closed_by_operation', 'is_current', 'is_deleted']
    ) }}
{% endmacro %}
