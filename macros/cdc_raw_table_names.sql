{% macro cdc_raw_table_names() %}
    {#-
        The raw tables the staging job writes (python_udfs/staging.py RAW_TABLES): the three
        every feed shares, and raw_<format> for each of cdc_format_names().
    -#}
    {%- set names = ['raw_ingested_files', 'raw_rejects', 'raw_metadata'] -%}
    {%- for format in cdc_format_names() -%}
        {%- do names.append('raw_' ~ format) -%}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
