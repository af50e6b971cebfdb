{% macro cdc_scope_predicate(model_name, predicate, generation_index=-1, when_missing='false') %}
    {#-
        `predicate` (SQL text) with `{relation}` replaced by the model's relation and
        `{generation}` by one of its partition values (generation_index: -1 the newest, -2 the
        one before). 'true' when tests check all history (cdc_tests_check_all_history) and at
        parse time; `when_missing` when the model has fewer partitions than that; 'true' for
        the newest when it is the only one (the first run, a full refresh: every row is the
        last run's, and the test reads no subquery to find that out).
    -#}
    {%- if not execute or cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set relation = cdc_model_relation(model_name) -%}
    {%- set generations = cdc_partition_values(relation) -%}
    {%- if generations | length < -generation_index -%}
        {{ return(when_missing) }}
    {%- endif -%}
    {%- if generations | length == 1 and generation_index == -1 -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(predicate | replace('{relation}', relation | string) | replace('{generation}', generations[generation_index])) }}
{% endmacro %}
