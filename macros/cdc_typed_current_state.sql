{% macro cdc_typed_current_state(feed, source_schema, source_table) %}
    {#- Body of a typed current-state model (macros/_macros.yml). -#}
    {{ cdc_typed_rows(
        'current_state', feed, source_schema, source_table,
        ['primary_key'], ['last_change_position', 'last_committed_at']
    ) }}
{% endmacro %}
