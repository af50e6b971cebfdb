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
