{% macro cdc_landed_file_name(path) -%}
    {#- SQL string expression: the file name of landing path `path`, without folder or `.gz`. -#}
    regexp_replace(regexp_extract({{ path }}, '[^/]+$', 0), '(?i)[.]gz$', '')
{%- endmacro %}
