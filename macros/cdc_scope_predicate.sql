{% macro cdc_scope_predicate(model_name, generation_column, predicate, generation_index=-1, when_missing='false') %}
    {#-
        `predicate` (SQL text) with `{relation}` replaced by the model's relation and
        `{generation}` by a scalar subquery of one of its generations, found when the test runs
        (generation_index: -1 the newest, -2 the one before). Spark prunes the partitions with
        the subquery's value (a dynamic partition filter), so a scoped test reads the files of
        one generation. `when_missing` where the model has no such generation (the predicate is
        null: coalesce). 'true' when tests check all history (cdc_tests_check_all_history) and
        at parse time. Nothing is read when the test compiles (issue 45).
    -#}
    {%- if not execute or cdc_tests_check_all_history() -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set relation = cdc_model_relation(model_name) -%}
    {%- if relation is none -%}
        {{ return(when_missing) }}
    {%- endif -%}
    {%- set newest = '(select max(' ~ generation_column ~ ') from ' ~ relation ~ ')' -%}
    {%- if generation_index == -1 -%}
        {%- set generation = newest -%}
    {%- elif generation_index == -2 -%}
        {%- set generation = '(select max(' ~ generation_column ~ ') from ' ~ relation
            ~ ' where ' ~ generation_column ~ ' < ' ~ newest ~ ')' -%}
    {%- else -%}
        {{ exceptions.raise_compiler_error(
            "cdc_scope_predicate: generation_index is " ~ generation_index ~ "; use -1 (the newest) or -2 (the one before)."
        ) }}
    {%- endif -%}
    {%- set scoped = predicate | replace('{relation}', relation | string) | replace('{generation}', generation) -%}
    {{ return('coalesce(' ~ scoped ~ ', ' ~ when_missing ~ ')') }}
{% endmacro %}
