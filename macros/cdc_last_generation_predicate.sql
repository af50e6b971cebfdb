{% macro cdc_last_generation_predicate(prefix='') %}
    {#- The rows this invocation logged, as a predicate (macros/_macros.yml). -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ "applied_generation = '" ~ cdc_generation() ~ "'") }}
{% endmacro %}
