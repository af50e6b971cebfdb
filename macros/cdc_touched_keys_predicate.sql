{% macro cdc_touched_keys_predicate(history, prefix='') %}
    {#-
        SQL predicate on key_id: this invocation applied the key (its current version in
        `history`, the relation of the history mart, has this run's history_generation: the
        keys with new changes, and every key of a table the run reset). 'true' when tests check
        all history (cdc_tests_check_all_history). `prefix` qualifies the column, e.g.
        'history.'.
    -#}
    {%- if cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {{ return(prefix ~ 'key_id in (select touched.key_id from ' ~ history
        ~ " as touched where touched.history_generation = '" ~ cdc_generation() ~ "')") }}
{% endmacro %}
