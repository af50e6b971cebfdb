{% macro cdc_new_changes_predicate(relation, prefix='') %}
    {#- The changes this invocation logged, as a predicate (macros/_macros.yml). -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ 'change_id in (select new_changes.change_id from ' ~ relation
        ~ " as new_changes where new_changes.applied_generation = '" ~ cdc_generation() ~ "')") }}
{% endmacro %}
