{% macro cdc_like_pattern(glob) -%}
    {#- The LIKE pattern of a file-name pattern, as a literal (macros/_macros.yml). -#}
    {{ cdc_string_literal(
        glob | replace('\\', '\\\\') | replace('%', '\\%') | replace('_', '\\_')
        | replace('*', '%') | replace('?', '_')
    ) }}
{%- endmacro %}
