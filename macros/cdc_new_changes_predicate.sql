{% macro cdc_new_changes_predicate(prefix='') %}
    {#-
        SQL predicate on change_id: the change was appended to change_log (its store int_changes_logged) by the last run that
        appended any (its newest applied_generation partition). 'true' when tests check all
        history; 'false' before any change was applied.
    -#}
    {{ return(cdc_scope_predicate('int_changes_logged', 'applied_generation',
        prefix ~ "change_id in (select new_changes.change_id from {relation} as new_changes"
        ~ ' where new_changes.applied_generation = {generation})')) }}
{% endmacro %}
