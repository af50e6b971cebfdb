{% macro cdc_table_key(feed, source_schema, source_table) -%}
    {#- The table key of one catalog table, at compile time (macros/_macros.yml). -#}
    {{- local_md5(
        (feed | length) ~ ':' ~ feed ~ (source_schema | length) ~ ':' ~ source_schema
        ~ (source_table | length) ~ ':' ~ source_table
    )[:16] -}}
{%- endmacro %}
