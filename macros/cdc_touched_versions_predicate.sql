{% macro cdc_touched_versions_predicate(prefix='') %}
    {#-
        SQL predicate on version_id: the version was written by the last run that applied
        changes (the newest history_generation partition of int_history_versions). 'true' when
        tests check all history; 'false' before any run applied a change.
    -#}
    {{ return(cdc_scope_predicate('int_history_versions', 'history_generation',
        prefix ~ "version_id in (select touched.version_id from {relation} as touched"
        ~ ' where touched.history_generation = {generation})')) }}
{% endmacro %}
