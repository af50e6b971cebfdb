{% macro cdc_last_generation_predicate(prefix='') %}
    {#-
        SQL predicate on applied_generation: the row was appended to change_log (its store int_changes_logged) by the last run
        that appended any (a partition filter). 'true' when tests check all history; 'false'
        before any change was applied.
    -#}
    {{ return(cdc_scope_predicate('int_changes_logged', 'applied_generation', prefix ~ 'applied_generation = {generation}')) }}
{% endmacro %}
