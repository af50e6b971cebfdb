{% macro cdc_state_watermark() %}
    {#-
        SQL expression (a scalar subquery, string type) of the last change_log generation the
        state has applied: the smallest state_generation of the previous run's int_key_state
        (source cdc_state.int_key_state), '' when it holds no row. Read when the query runs,
        not when it compiles; Spark prunes change_log's partitions with it at run time. Every
        run rewrites every feed's partition of the state with its generation, so a run killed
        while Spark moved the partitions into place leaves some feeds at the older generation:
        the smallest is the one all feeds have applied (ADR 0025). '' with --full-refresh.
    -#}
    {%- if flags.FULL_REFRESH -%}
        ''
    {%- else -%}
        (select coalesce(min(state_generation), '') from {{ source('cdc_state', 'int_key_state') }})
    {%- endif -%}
{% endmacro %}
