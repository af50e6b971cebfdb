{% macro cdc_like_pattern(glob) -%}
    {#-
        A Spark SQL string literal of the LIKE pattern of file-name pattern `glob`: `*` any run
        of characters, `?` one character, every other character itself (LIKE's own `%`, `_`
        and its escape character `\` are escaped).
    -#}
    {{ cdc_string_literal(
        glob | replace('\\', '\\\\') | replace('%', '\\%') | replace('_', '\\_')
        | replace('*', '%') | replace('?', '_')
    ) }}
{%- endmacro %}
