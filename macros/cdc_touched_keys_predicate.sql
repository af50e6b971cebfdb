{% macro cdc_touched_keys_predicate(prefix='') %}
    {#-
        SQL predicate on key_id: the key was applied by the last run that applied changes (its
        current version has history's newest history_generation: the keys with new changes, and
        every key of a table the run reset).
        'true' when tests check all history (cdc_tests_check_all_history); 'false' before any
        run applied a change. `prefix` qualifies the column, e.g. 'history.'.
    -#}
    {{ return(cdc_scope_predicate('history', 'history_generation',
        prefix ~ 'key_id in (select touched.key_id'
        ~ ' from {relation} as touched where touched.history_generation = {generation})')) }}
{% endmacro %}
