{% macro cdc_tests_check_all_history() %}
    {#-
        True when data tests check the whole history: var cdc_test_scope is 'all', or the
        invocation runs with --full-refresh. Otherwise ('run', the default) the invariant tests
        check what the last run changed (cdc_touched_keys_predicate, cdc_new_changes_predicate).
    -#}
    {%- set scope = var('cdc_test_scope', 'run') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error(
            "var cdc_test_scope is '" ~ scope ~ "': use 'run' (what the last run changed) or 'all' (the whole history)."
        ) }}
    {%- endif -%}
    {{ return(scope == 'all' or flags.FULL_REFRESH) }}
{% endmacro %}
