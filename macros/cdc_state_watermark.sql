{% macro cdc_state_watermark() %}
    {#-
        SQL expression (string type) of the last change_log generation the apply has merged:
        the newest history_generation of the history the previous runs left (source
        cdc_state.history; ADR 0025, ADR 0038), '' when it holds no row. Every run that applies
        a change writes the current version of each key it applies with its generation, in the
        same MERGE as its versions (one Delta commit), so every change_log row of that
        generation or before is in it. `cdc run` reads it once before the build and passes it
        in CDC_STATE_WATERMARK (python_udfs/working_set.py, state_watermark): a string literal,
        with which Spark prunes change_log's partitions when it plans. Without it (dbt run by
        hand, a Thrift Server's dbt, parse time) a scalar subquery of the source, read when the
        query runs. '' with --full-refresh.
    -#}
    {%- set watermark = env_var('CDC_STATE_WATERMARK', '-') if execute else '-' -%}
    {%- if flags.FULL_REFRESH -%}
        ''
    {%- elif watermark != '-' -%}
        {{ cdc_string_literal(watermark) }}
    {%- else -%}
        (select coalesce(max(history_generation), '') from {{ source('cdc_state', 'history') }})
    {%- endif -%}
{% endmacro %}
