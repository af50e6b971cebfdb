{% macro cdc_new_batches_predicate(prefix='') %}
    {#- The batches this run reads as new, as a predicate (macros/_macros.yml). -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set batches = cdc_new_batches() -%}
    {%- if batches | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set quoted = [] -%}
    {%- for batch in batches -%}
        {%- do quoted.append("'" ~ batch ~ "'") -%}
    {%- endfor -%}
    {{ return(prefix ~ 'ingest_batch_id in (' ~ quoted | join(', ') ~ ')') }}
{% endmacro %}
