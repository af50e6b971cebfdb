{% macro cdc_raw_table_names() %}
    {#- The raw tables the staging job writes (macros/_macros.yml). -#}
    {%- set names = ['raw_ingested_files', 'raw_rejects', 'raw_metadata'] -%}
    {%- for format in cdc_format_names() -%}
        {%- do names.append('raw_' ~ format) -%}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
