{% macro cdc_state_watermark() %}
    {#-
        SQL expression (a scalar subquery, string type) of the last change_log generation the
        apply has merged: the newest history_generation of the history the previous runs left
        (source cdc_state.history; ADR 0025, ADR 0038), '' when it holds no row. Every run that
        applies a change writes the current version of each key it applies with its generation,
        in the same MERGE as its versions (one Delta commit), so every change_log row of that
        generation or before is in it. Read when the query runs, not when it compiles; Spark
        prunes change_log's partitions with it at run time. '' with --full-refresh.
    -#}
    {%- if flags.FULL_REFRESH -%}
        ''
    {%- else -%}
        (select coalesce(max(history_generation), '') from {{ source('cdc_state', 'history') }})
    {%- endif -%}
{% endmacro %}
