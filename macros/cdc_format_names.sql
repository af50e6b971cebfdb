{% macro cdc_format_names() %}
    {#- Every feed format this version decodes (macros/_macros.yml). -#}
    {{ return(['qlik_change_tables', 'qlik_kafka', 'goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract']) }}
{% endmacro %}
