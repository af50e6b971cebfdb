{% macro cdc_tests_check_all_history() %}
    {#- Whether data tests check the whole history (macros/_macros.yml). -#}
    {%- set scope = var('cdc_test_scope', 'run') -%}
    {%- if scope not in ('run', 'all') -%}
        {{ exceptions.raise_compiler_error(
            "var cdc_test_scope is '" ~ scope ~ "': use 'run' (what the last run changed) or 'all' (the whole history)."
        ) }}
    {%- endif -%}
    {%- set reads_everything = execute and cdc_new_batches() is none -%}
    {{ return(scope == 'all' or flags.FULL_REFRESH or reads_everything) }}
{% endmacro %}
