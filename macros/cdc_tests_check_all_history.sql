{% macro cdc_tests_check_all_history() %}
    {#-
        True when data tests check the whole history: var cdc_test_scope is 'all', the
        invocation runs with --full-refresh, or `cdc run` passed a working set of every batch of
        every feed (CDC_WORKING_SET: a first run, or a state table missing), where every key
        and change is the run's anyway and the scoping subqueries would only add joins. So does
        dbt without `cdc run` (no CDC_WORKING_SET: its working set is every batch), and a
        `dbt test` of its own checks everything. Otherwise ('run', the default) the invariant
        tests check what this invocation changed (cdc_touched_keys_predicate,
        cdc_new_changes_predicate, cdc_last_generation_predicate, cdc_new_batches_predicate).
    -#}
    {%- set scope = var('cdc_test_scope', 'run') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error(
            "var cdc_test_scope is '" ~ scope ~ "': use 'run' (what the last run changed) or 'all' (the whole history)."
        ) }}
    {%- endif -%}
    {%- set reads_everything = execute and cdc_new_batches() is none -%}
    {{ return(scope == 'all' or flags.FULL_REFRESH or reads_everything) }}
{% endmacro %}
