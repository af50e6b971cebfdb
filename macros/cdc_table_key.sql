{% macro cdc_table_key(feed, source_schema, source_table) -%}
    {#-
        The table key of one catalog table, computed when the model compiles: the first 16 hex
        digits of the MD5 of its length-prefixed feed, schema and table names. Equal to
        cdc_table_key_sql on the same names; current_state and history are partitioned by
        it.
    -#}
    {{- local_md5(
        (feed | length) ~ ':' ~ feed ~ (source_schema | length) ~ ':' ~ source_schema
        ~ (source_table | length) ~ ':' ~ source_table
    )[:16] -}}
{%- endmacro %}
