{% macro cdc_new_batches_predicate(prefix='') %}
    {#-
        SQL predicate on ingest_batch_id: the batch is one this run's working set reads as new
        (cdc_new_batches, literals: nothing is read). 'true' when tests check all history (the
        working set reads every batch, or var cdc_test_scope is 'all').
    -#}
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
