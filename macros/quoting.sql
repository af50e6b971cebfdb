{% macro cdc_string_literal(value) -%}
    {#-
        A Spark SQL string literal holding `value` exactly, or `cast(null as string)` when it
        is none. For names from the data (quotes, backslashes, newlines): Spark unescapes
        backslash sequences in literals by default (spark.sql.parser.escapedStringLiterals
        false), so backslash and quote are escaped, and newline, carriage return and tab are
        written as \n, \r, \t.
    -#}
    {%- if value is none -%}
        cast(null as string)
    {%- else -%}
        '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") | replace("\n", "\\n") | replace("\r", "\\r") | replace("\t", "\\t") }}'
    {%- endif -%}
{%- endmacro %}


{% macro cdc_quote_identifier(name) -%}
    {#- A Spark SQL identifier in backticks, a backtick in `name` doubled. -#}
    `{{ name | string | replace("`", "``") }}`
{%- endmacro %}


{% macro cdc_table_key(feed, source_schema, source_table) -%}
    {#-
        The table key of one catalog table, computed when the model compiles: the first 16 hex
        digits of the MD5 of its length-prefixed feed, schema and table names. Equal to
        cdc_table_key_sql on the same names; current_state is partitioned by it.
    -#}
    {{- local_md5(
        (feed | length) ~ ':' ~ feed ~ (source_schema | length) ~ ':' ~ source_schema
        ~ (source_table | length) ~ ':' ~ source_table
    )[:16] -}}
{%- endmacro %}


{% macro cdc_table_key_sql(feed='feed', source_schema='source_schema', source_table='source_table') -%}
    {#- SQL string expression of the table key (see cdc_table_key) of the row's columns. -#}
    substr(md5(concat(
        cast(length({{ feed }}) as string), ':', {{ feed }},
        cast(length({{ source_schema }}) as string), ':', {{ source_schema }},
        cast(length({{ source_table }}) as string), ':', {{ source_table }}
    )), 1, 16)
{%- endmacro %}
