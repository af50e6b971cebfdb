{% macro cdc_new_batches() %}
    {#-
        The ingest batch ids this run's working set reads as new (cdc_working_set rows of kind
        'new'), in working-set order; none when the working set reads every batch of every
        feed (kind 'all' without a feed: a first run, a --full-refresh, dbt without `cdc run`).
    -#}
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
