{% macro cdc_last_generation_predicate(prefix='') %}
    {#-
        SQL predicate on applied_generation: the row was logged by this invocation (its
        generation, a literal: a partition filter, and nothing is read when it compiles). 'true'
        when tests check all history (cdc_tests_check_all_history).
    -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ "applied_generation = '" ~ cdc_generation() ~ "'") }}
{% endmacro %}
