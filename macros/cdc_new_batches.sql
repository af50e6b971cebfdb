{% macro cdc_new_batches() %}
    {#- The ingest batches this run's working set reads as new (macros/_macros.yml). -#}
    {%- set new_batches = [] -%}
    {%- for kind, feed, batch, source_file, record_offset in cdc_working_set() -%}
        {%- if kind == 'all' and feed is none -%}
            {{ return(none) }}
        {%- elif kind == 'new' -%}
            {%- do new_batches.append(batch) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(new_batches) }}
{% endmacro %}
