{% macro cdc_new_changes_predicate(relation, prefix='') %}
    {#-
        SQL predicate on change_id: the change was logged by this invocation (a row of
        `relation`, the change log or its store, with its applied_generation). Every generation
        of `relation` is checked against those ids, so a scoped `unique` test is exact for the
        new changes. 'true' when tests check all history.
    -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ 'change_id in (select new_changes.change_id from ' ~ relation
        ~ " as new_changes where new_changes.applied_generation = '" ~ cdc_generation() ~ "')") }}
{% endmacro %}
