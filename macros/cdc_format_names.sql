{% macro cdc_format_names() %}
    {#-
        Every feed format this version decodes, in the order of the Python registry
        (python_udfs/registry.py FORMATS; tests/test_registry.py checks that the two agree). Each
        has a staging folder models/staging/<format>/ and a raw table raw_<format>.
    -#}
    {{ return(['qlik_change_tables', 'qlik_kafka', 'goldengate_trail', 'hirdb_update_sql', 'linkexpress_extract']) }}
{% endmacro %}
