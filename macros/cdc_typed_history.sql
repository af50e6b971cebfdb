{% macro cdc_typed_history(feed, source_schema, source_table) %}
    {#- Body of a typed history model (macros/_macros.yml). -#}
    {{ cdc_typed_rows(
        'history', feed, source_schema, source_table,
        ['version_id', 'primary_key'],
        ['valid_from', 'valid_to', 'valid_from_position', 'valid_to_position',
         'opened_by_operation', 'closed_by_operation', 'is_current', 'is_deleted']
    ) }}
{% endmacro %}
