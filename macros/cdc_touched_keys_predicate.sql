{% macro cdc_touched_keys_predicate(history, prefix='') %}
    {#- The keys this invocation applied, as a predicate (macros/_macros.yml). -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ 'key_id in (select touched.key_id from ' ~ history
        ~ " as touched where touched.history_generation = '" ~ cdc_generation() ~ "')") }}
{% endmacro %}
